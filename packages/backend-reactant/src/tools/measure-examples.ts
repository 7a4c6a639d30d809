/**
 * `bun packages/backend-reactant/src/tools/measure-examples.ts [--profile]`: compile time, plan
 * load time and size, best-of-20 run latency and peak run memory of the example bundles on this
 * engine; with --profile, the ops that take the most time per run.
 */
import { readFileSync } from "node:fs";
import { createReactantBackend } from "../backend.ts";
import type { OpTime } from "../plan/program.ts";
import { EXAMPLES, EXAMPLE_CASES, exampleArguments } from "./example-tensors.ts";

const profile = process.argv.includes("--profile") ? new Map<string, OpTime>() : undefined;
for (const [model, batch] of EXAMPLE_CASES) {
  const backend = createReactantBackend({ profile });
  const args = await Promise.all(exampleArguments(model, batch).map((t) => backend.upload(t)));
  const bytes = new Uint8Array(readFileSync(`${EXAMPLES}${model}/model.b${batch}.mlir`));
  let compileMs = Number.POSITIVE_INFINITY;
  let exe = await backend.compile({ bytes, format: "text" }, {});
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    exe = await backend.compile({ bytes, format: "text" }, {});
    compileMs = Math.min(compileMs, performance.now() - t);
  }
  const plan = await backend.serialize(exe);
  let loadMs = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    await backend.deserialize(plan, {});
    loadMs = Math.min(loadMs, performance.now() - t);
  }
  for (let i = 0; i < 5; i++) for (const o of await backend.execute(exe, args)) o.dispose();
  profile?.clear();
  const base = backend.memoryStats().inUseBytes;
  backend.resetPeakMemory();
  let runMs = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 20; i++) {
    const t = performance.now();
    const outs = await backend.execute(exe, args);
    runMs = Math.min(runMs, performance.now() - t);
    for (const o of outs) o.dispose();
  }
  const scratch = backend.memoryStats().peakBytes - base;
  console.log(
    `${model} b${batch}: compile ${compileMs.toFixed(2)} ms, plan ${plan.length} B loads in ${loadMs.toFixed(2)} ms, run ${runMs.toFixed(2)} ms, run scratch ${scratch} B`,
  );
  if (profile) {
    const top = [...profile].sort((a, b) => b[1].ms - a[1].ms).slice(0, 6);
    for (const [op, t] of top) console.log(`    ${op.padEnd(28)} ${(t.ms / 20).toFixed(3)} ms/run`);
  }
  await backend.dispose();
}

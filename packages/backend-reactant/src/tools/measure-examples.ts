/**
 * `bun packages/backend-reactant/src/tools/measure-examples.ts [--profile]`: compile time, plan
 * load time and size, best-of-20 run latency and peak run memory of the example bundles on this
 * engine; with --profile, the ops that take the most time per run.
 */
import { readFileSync } from "node:fs";
import type { DType, HostTensor } from "@xlaserve/core";
import { createReactantBackend } from "../backend.ts";
import type { OpTime } from "../plan/program.ts";

const EXAMPLES = new URL("../../../../examples/models/", import.meta.url).pathname;
const SAFETENSORS_DTYPES: Record<string, DType> = {
  F32: "f32",
  F64: "f64",
  I32: "i32",
  I64: "i64",
  F16: "f16",
  BF16: "bf16",
};

function readTensors(path: string): { metadata: Record<string, string>; tensors: Map<string, HostTensor> } {
  const bytes = new Uint8Array(readFileSync(path));
  const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const tensors = new Map<string, HostTensor>();
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets } = info as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const d = SAFETENSORS_DTYPES[dtype];
    if (!d) continue;
    const raw = bytes.slice(8 + headerLength + data_offsets[0], 8 + headerLength + data_offsets[1]).buffer;
    const data = d === "f32" ? new Float32Array(raw) : d === "i32" ? new Int32Array(raw) : new Float64Array(raw);
    tensors.set(name, { dtype: d, shape, data });
  }
  return { metadata: header.__metadata__ ?? {}, tensors };
}

const profile = process.argv.includes("--profile") ? new Map<string, OpTime>() : undefined;
for (const [model, batch] of [
  ["mlp", 1],
  ["mlp", 8],
  ["cnn", 1],
  ["cnn", 4],
  ["transformer", 1],
  ["transformer", 4],
] as const) {
  const backend = createReactantBackend({ profile });
  const dir = `${EXAMPLES}${model}`;
  const weights = readTensors(`${dir}/weights.safetensors`);
  const reference = readTensors(`${dir}/reference.safetensors`);
  const inputs = [...reference.tensors].filter(([k]) => k.startsWith(`b${batch}/inputs/`)).map(([, t]) => t);
  const order = JSON.parse(weights.metadata.argument_order ?? "[]") as string[];
  const args = await Promise.all(
    [...inputs, ...order.map((n) => weights.tensors.get(n) as HostTensor)].map((t) => backend.upload(t)),
  );
  const bytes = new Uint8Array(readFileSync(`${dir}/model.b${batch}.mlir`));
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

/**
 * `bun packages/backend-reactant/src/tools/bench-models.ts [--profile] [--runs N] [--only a,b]`:
 * median execute latency (batch 1) of the example MLP, CNN and transformer and, when
 * tmp/r50/model.b1.mlir exists (gitignored scratch, no weights), ResNet-50 with random weights
 * made from @main's signature. With --profile, the per-op exclusive time of each model.
 */
import { existsSync, readFileSync } from "node:fs";
import type { DeviceBuffer, HostTensor } from "@xlaserve/core";
import { createReactantBackend } from "../backend.ts";
import { readModule } from "../read-module.ts";
import type { OpTime } from "../plan/program.ts";
import { EXAMPLES, exampleArguments } from "./example-tensors.ts";

const ROOT = new URL("../../../../", import.meta.url).pathname;
const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const runs = Number(flag("--runs") ?? 20);
const only = (flag("--only") ?? "mlp,cnn,transformer,resnet50").split(",");
const wantProfile = argv.includes("--profile");

/** A deterministic N(0, sd) stream (Box-Muller over a 32-bit LCG). */
function gaussian(seed: number): () => number {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 1) / 4294967297;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** Random arguments from @main's signature; 1-d f32 weights are made positive (BN variances). */
function randomArgs(text: string): HostTensor[] {
  const main = readModule(text, "r50").funcs.find((f) => f.name === "main");
  const next = gaussian(42);
  return (main?.args ?? []).map((a, i) => {
    if (a.type.kind !== "tensor") throw new Error("non-tensor argument");
    const n = a.type.shape.reduce((x, y) => x * y, 1);
    const data = new Float32Array(n);
    const positive = i > 0 && a.type.shape.length === 1;
    for (let k = 0; k < n; k++) data[k] = positive ? 0.5 + Math.abs(next()) * 0.05 : next() * (i === 0 ? 1 : 0.05);
    return { dtype: "f32", shape: a.type.shape, data };
  });
}

for (const model of only) {
  let source: { text: string; tensors: HostTensor[] };
  if (model === "resnet50") {
    const path = `${ROOT}tmp/r50/model.b1.mlir`;
    if (!existsSync(path)) {
      console.log("resnet50: no tmp/r50/model.b1.mlir, skipped");
      continue;
    }
    const text = readFileSync(path, "utf8");
    source = { text, tensors: randomArgs(text) };
  } else {
    const tensors = exampleArguments(model, 1);
    source = { text: readFileSync(`${EXAMPLES}${model}/model.b1.mlir`, "utf8"), tensors };
  }
  const profile = wantProfile ? new Map<string, OpTime>() : undefined;
  const backend = createReactantBackend({ profile });
  const args: DeviceBuffer[] = await Promise.all(source.tensors.map((t) => backend.upload(t)));
  const exe = await backend.compile({ bytes: new TextEncoder().encode(source.text), format: "text" }, {});
  const warm = model === "resnet50" ? 3 : 20;
  for (let i = 0; i < warm; i++) for (const o of await backend.execute(exe, args)) o.dispose();
  profile?.clear();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const outs = await backend.execute(exe, args);
    times.push(performance.now() - t);
    for (const o of outs) o.dispose();
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] as number;
  console.log(`${model} b1: median ${median.toFixed(3)} ms, min ${(times[0] as number).toFixed(3)} ms (${runs} runs)`);
  if (profile) {
    for (const [op, t] of [...profile].sort((a, b) => b[1].ms - a[1].ms).slice(0, 10))
      console.log(`    ${op.padEnd(30)} ${(t.ms / runs).toFixed(3)} ms/run  x${t.count / runs}`);
  }
  await backend.dispose();
}

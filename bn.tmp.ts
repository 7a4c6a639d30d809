import { parseModule } from "./packages/backend-reactant/src/parser/parser.ts";
import { Program } from "./packages/backend-reactant/src/plan/program.ts";
import { Arena } from "./packages/backend-reactant/src/plan/arena.ts";
const text = `func.func @main(%x: tensor<1x56x56x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x56x56x64xf32> {
  %0 = stablehlo.broadcast_in_dim %s, dims = [3] : (tensor<64xf32>) -> tensor<1x56x56x64xf32>
  %1 = stablehlo.multiply %x, %0 : tensor<1x56x56x64xf32>
  %2 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<64xf32>) -> tensor<1x56x56x64xf32>
  %3 = stablehlo.add %1, %2 : tensor<1x56x56x64xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<1x56x56x64xf32>
  %5 = stablehlo.maximum %3, %4 : tensor<1x56x56x64xf32>
  return %5 : tensor<1x56x56x64xf32>
}`;
const n = 56*56*64;
const args = [{ type: "f32" as const, shape: [1,56,56,64], data: new Float32Array(n).map(() => Math.random() - 0.5) }, { type: "f32" as const, shape: [64], data: new Float32Array(64).fill(2) }, { type: "f32" as const, shape: [64], data: new Float32Array(64).fill(0.1) }];
for (const fuse of [true, false]) {
  const p = new Program(parseModule(text), { fuse }); const f = p.func("main");
  for (let i = 0; i < 20; i++) f.invoke(args, { arena: new Arena(), failures: [] });
  let ms = Infinity; for (let i = 0; i < 50; i++) { const t = performance.now(); f.invoke(args, { arena: new Arena(), failures: [] }); ms = Math.min(ms, performance.now() - t); }
  console.log("fuse", fuse, ms.toFixed(3), "ms", (ms * 1e6 / n).toFixed(2), "ns/elem", f.body.steps.length, "steps");
}
{
  const x = args[0]!.data as Float32Array, s = args[1]!.data as Float32Array, b = args[2]!.data as Float32Array;
  let ms = Infinity;
  for (let r = 0; r < 50; r++) { const t = performance.now(); const out = new Float32Array(n);
    for (let i = 0; i < n; i++) { const c = i & 63; out[i] = Math.max(Math.fround(Math.fround(x[i]! * s[c]!) + b[c]!), 0); }
    ms = Math.min(ms, performance.now() - t); }
  console.log("hand", ms.toFixed(3), "ms", (ms * 1e6 / n).toFixed(2), "ns/elem");
}

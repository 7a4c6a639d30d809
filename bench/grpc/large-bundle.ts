/**
 * The large-input benchmark's bundle: one FP32 input [1, n] and a one-element answer, either its
 * last element times a weight ("last": the figure is then the transport's, not the engine's) or
 * its sum times a weight ("sum": a full read, the same compute on both sides).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export type LargeProgram = "sum" | "last";

/** A bundle of one large FP32 input [1, n] and a one-element answer (its last element or its sum, times a weight). */
export function writeSumBundle(dir: string, n: number, program: LargeProgram): void {
  writeFileSync(
    join(dir, "manifest.yaml"),
    `format_version: "2.0"
name: "sum_large"
description: "sums a large FP32 input (benchmark of large inputs)"
executable_inputs:
  - name: "x"
    dtype: "f32"
    shape: "cn"
    dims:
      c: ${n}
executable_outputs:
  - name: "sum"
    dtype: "f32"
    shape: "cn"
    dims:
      c: 1
batching:
  compiled_batch_sizes:
    - 1
`,
  );
  writeFileSync(
    join(dir, "model.b1.mlir"),
    program === "sum"
      ? `module @sum_large {
  func.func public @main(%arg0: tensor<1x${n}xf32>, %arg1: tensor<1xf32>) -> (tensor<1x1xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<1x${n}xf32>, tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<1xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<1xf32>) -> tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}
`
      : `module @sum_large {
  func.func public @main(%arg0: tensor<1x${n}xf32>, %arg1: tensor<1xf32>) -> (tensor<1x1xf32>) {
    %0 = stablehlo.slice %arg0 [0:1, ${n - 1}:${n}] : (tensor<1x${n}xf32>) -> tensor<1x1xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}
`,
  );
  const header = JSON.stringify({
    __metadata__: { argument_order: JSON.stringify(["scale"]), format: "pt" },
    scale: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
  });
  const headerBytes = new TextEncoder().encode(header.padEnd(Math.ceil(header.length / 8) * 8, " "));
  const file = new Uint8Array(8 + headerBytes.byteLength + 4);
  new DataView(file.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  file.set(headerBytes, 8);
  new DataView(file.buffer).setFloat32(8 + headerBytes.byteLength, 1, true);
  writeFileSync(join(dir, "weights.safetensors"), file);
}

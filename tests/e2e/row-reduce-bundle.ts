/**
 * A bundle of one FP32 input [B, n] and a one-element answer per row, times a weight of 1: the
 * row's sum ("sum": a full read of every input byte) or its last element ("last": the figure is
 * then the transport's, not the engine's). Large-input tests and benchmarks use it because its
 * answer is known without a reference run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSafetensors } from "../../packages/core/test/helpers/bundles.ts";

export type RowReduceProgram = "sum" | "last";

export interface RowReduceBundle {
  readonly name: string;
  readonly description?: string;
  /** Floats per row. */
  readonly n: number;
  readonly batchSizes: readonly number[];
  readonly program: RowReduceProgram;
}

function manifest({ name, description, n, batchSizes }: RowReduceBundle): string {
  return `format_version: "2.0"
name: "${name}"
${description ? `description: "${description}"\n` : ""}executable_inputs:
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
${batchSizes.map((b) => `    - ${b}`).join("\n")}
`;
}

function program({ name, n, program }: RowReduceBundle, b: number): string {
  const body =
    program === "sum"
      ? `    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<${b}x${n}xf32>, tensor<f32>) -> tensor<${b}xf32>
    %1 = stablehlo.reshape %0 : (tensor<${b}xf32>) -> tensor<${b}x1xf32>`
      : `    %1 = stablehlo.slice %arg0 [0:${b}, ${n - 1}:${n}] : (tensor<${b}x${n}xf32>) -> tensor<${b}x1xf32>`;
  return `module @${name} {
  func.func public @main(%arg0: tensor<${b}x${n}xf32>, %arg1: tensor<1xf32>) -> (tensor<${b}x1xf32>) {
${body}
    %2 = stablehlo.reshape %arg1 : (tensor<1xf32>) -> tensor<1x1xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<${b}x1xf32>
    %4 = stablehlo.multiply %1, %3 : tensor<${b}x1xf32>
    return %4 : tensor<${b}x1xf32>
  }
}
`;
}

export function writeRowReduceBundle(dir: string, bundle: RowReduceBundle): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "manifest.yaml"), manifest(bundle));
  for (const b of bundle.batchSizes) writeFileSync(join(dir, `model.b${b}.mlir`), program(bundle, b));
  const scale = new Uint8Array(new Float32Array([1]).buffer);
  writeFileSync(
    join(dir, "weights.safetensors"),
    buildSafetensors([{ name: "scale", dtype: "F32", shape: [1], bytes: scale }], {
      argument_order: JSON.stringify(["scale"]),
    }),
  );
}

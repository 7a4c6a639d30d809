/**
 * A synthetic image bundle for benchmarks and tests of the request path: input "image" of FP32
 * [B, 224, 224, 3] (ResNet-50's, 602 KB a row) and output "head" of FP32 [B, 672] (about ResNet-50's
 * 1000 logits), each image's first pixel row times a weight of 1. Its compute is a copy of 2.7 KB
 * a row (a slice, no reshape of the whole input, which would copy every byte), so what a request costs is the host's path (receiving, decoding, handing over,
 * joining, answering), not the engine's; the answer is known without a reference run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSafetensors } from "../../packages/core/test/helpers/bundles.ts";

export const IMAGE_SHAPE = [224, 224, 3] as const;
export const IMAGE_FLOATS = IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2];
export const HEAD_FLOATS = IMAGE_SHAPE[1] * IMAGE_SHAPE[2];

function manifest(name: string, batchSizes: readonly number[]): string {
  return `format_version: "2.0"
name: "${name}"
description: "Synthetic 224x224 RGB input whose compute is one pixel row's copy: a request's cost is the host path"
executable_inputs:
  - name: "image"
    dtype: "f32"
    shape: "cwhn"
    dims:
      c: ${IMAGE_SHAPE[2]}
      w: ${IMAGE_SHAPE[1]}
      h: ${IMAGE_SHAPE[0]}
executable_outputs:
  - name: "head"
    dtype: "f32"
    shape: "cn"
    dims:
      c: ${HEAD_FLOATS}
batching:
  compiled_batch_sizes:
${batchSizes.map((b) => `    - ${b}`).join("\n")}
`;
}

function program(name: string, b: number): string {
  const [h, w, c] = IMAGE_SHAPE;
  return `module @${name} {
  func.func public @main(%arg0: tensor<${b}x${h}x${w}x${c}xf32>, %arg1: tensor<1xf32>) -> (tensor<${b}x${HEAD_FLOATS}xf32>) {
    %0 = stablehlo.slice %arg0 [0:${b}, 0:1, 0:${w}, 0:${c}] : (tensor<${b}x${h}x${w}x${c}xf32>) -> tensor<${b}x1x${w}x${c}xf32>
    %1 = stablehlo.reshape %0 : (tensor<${b}x1x${w}x${c}xf32>) -> tensor<${b}x${HEAD_FLOATS}xf32>
    %2 = stablehlo.reshape %arg1 : (tensor<1xf32>) -> tensor<1x1xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<${b}x${HEAD_FLOATS}xf32>
    %4 = stablehlo.multiply %1, %3 : tensor<${b}x${HEAD_FLOATS}xf32>
    return %4 : tensor<${b}x${HEAD_FLOATS}xf32>
  }
}
`;
}

/** Writes the bundle into `dir` (created), one module per compiled batch size. */
export function writeImageBundle(dir: string, name = "image", batchSizes: readonly number[] = [1, 8, 32]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "manifest.yaml"), manifest(name, batchSizes));
  for (const b of batchSizes) writeFileSync(join(dir, `model.b${b}.mlir`), program(name, b));
  const scale = new Uint8Array(new Float32Array([1]).buffer);
  writeFileSync(
    join(dir, "weights.safetensors"),
    buildSafetensors([{ name: "scale", dtype: "F32", shape: [1], bytes: scale }], {
      argument_order: JSON.stringify(["scale"]),
    }),
  );
}

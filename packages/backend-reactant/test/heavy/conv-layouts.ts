/**
 * JAX's default 2-D convolution layout, written out once for the convolution tests and
 * bench/cpu-kernels.bench.ts, which both build ResNet-style layers by hand.
 */
import type { ConvDimensionNumbers } from "../../src/kernels/heavy/index.ts";

/** NHWC input, HWIO kernel, NHWC output. */
export const NHWC_HWIO: ConvDimensionNumbers = {
  inputBatch: 0,
  inputFeature: 3,
  inputSpatial: [1, 2],
  kernelInputFeature: 2,
  kernelOutputFeature: 3,
  kernelSpatial: [0, 1],
  outputBatch: 0,
  outputFeature: 3,
  outputSpatial: [1, 2],
};

/** The same padding before and after on both spatial axes ("same" padding for an odd kernel). */
export function symmetricPadding2d(pad: number): [number, number][] {
  return [
    [pad, pad],
    [pad, pad],
  ];
}

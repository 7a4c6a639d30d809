/** A naive convolution straight from the StableHLO spec, in f64: the tests' oracle. */
import type { NDArray } from "../../src/array.ts";
import type { ConvAttributes } from "../../src/kernels/heavy/index.ts";
import { convGeometry } from "../../src/kernels/heavy/conv-attributes.ts";
import { forEachIndex, offsetOf } from "./helpers.ts";

export function naiveConvolution(
  lhs: NDArray,
  rhs: NDArray,
  attrs: ConvAttributes,
): { shape: number[]; data: Float64Array } {
  const g = convGeometry(lhs, rhs, attrs);
  const d = attrs.dims;
  const out = new Float64Array(g.resultShape.reduce((p, x) => p * x, 1));
  const lhsIndex = new Array<number>(lhs.shape.length).fill(0);
  const rhsIndex = new Array<number>(rhs.shape.length).fill(0);
  forEachIndex(g.resultShape, (oi, linear) => {
    const b = oi[d.outputBatch] as number;
    const f = oi[d.outputFeature] as number;
    const group = Math.floor(f / g.groupOutChannels);
    const batchIn = g.byBatch ? group * g.outBatch + b : b;
    let sum = 0;
    for (let i = 0; i < g.groupInChannels; i++) {
      const channel = g.byBatch ? i : group * g.groupInChannels + i;
      forEachIndex(g.kernelSpatial, (taps) => {
        lhsIndex[d.inputBatch] = batchIn;
        lhsIndex[d.inputFeature] = channel;
        for (let s = 0; s < g.spatialRank; s++) {
          const x =
            (oi[d.outputSpatial[s] as number] as number) * (g.strides[s] as number) +
            (taps[s] as number) * (g.rhsDilation[s] as number) -
            (g.padLow[s] as number);
          const dil = g.lhsDilation[s] as number;
          if (x < 0 || x % dil !== 0 || x / dil >= (g.inSpatial[s] as number)) return;
          lhsIndex[d.inputSpatial[s] as number] = x / dil;
          const k = taps[s] as number;
          rhsIndex[d.kernelSpatial[s] as number] = g.reversal[s] ? (g.kernelSpatial[s] as number) - 1 - k : k;
        }
        rhsIndex[d.kernelInputFeature] = i;
        rhsIndex[d.kernelOutputFeature] = f;
        sum +=
          (lhs.data[offsetOf(lhs.shape, lhsIndex)] as number) * (rhs.data[offsetOf(rhs.shape, rhsIndex)] as number);
      });
    }
    out[linear] = sum;
  });
  return { shape: g.resultShape, data: out };
}

/**
 * Depthwise convolution (each group reads one input channel: MobileNet's 3x3 layers) computed
 * directly on canonical [N, H, W, C] data. As per-group GEMMs it was one BLAS call per group and
 * batch with n = 1 and k = 9, where the call costs more than its arithmetic; here the channels
 * are the inner loop, contiguous in input, kernel and output. Sums run in f64 over the taps in
 * row-major kernel order and round once to the output precision (at least as accurate as the
 * f32 GEMM they replace).
 */
import type { ConvGeometry } from "./conv-attributes.ts";

/** Whether `depthwise2d` computes this convolution: 2-d, feature groups of one input channel. */
export function isDepthwise2d(g: ConvGeometry): boolean {
  return g.spatialRank === 2 && !g.byBatch && g.groups > 1 && g.groupInChannels === 1;
}

/**
 * out[n, y, x, o] = sum over taps of input[n, iy, ix, o / groupOutChannels] * kernel[ky, kx, 0, o],
 * where the tap tables (im2col.ts) give each output index's input index per tap, or -1 on padding
 * and dilation holes. `kernel` is canonical [kH, kW, 1, O] with any window reversal applied.
 * Per output position the valid taps are listed once; each channel's sum then stays in a register.
 */
export function depthwise2d(
  g: ConvGeometry,
  tables: Int32Array[],
  input: Float32Array | Float64Array,
  kernel: Float32Array | Float64Array,
  out: Float32Array | Float64Array,
): void {
  const [outH, outW] = g.outSpatial as [number, number];
  const [kH, kW] = g.kernelSpatial as [number, number];
  const [inH, inW] = g.inSpatial as [number, number];
  const C = g.inChannels;
  const O = g.outChannels;
  const mult = g.groupOutChannels;
  const rowTable = tables[0] as Int32Array;
  const colTable = tables[1] as Int32Array;
  const inAt = new Int32Array(kH * kW);
  const tapAt = new Int32Array(kH * kW);
  let w = 0;
  for (let n = 0; n < g.outBatch; n++) {
    const batchBase = n * inH * inW * C;
    for (let oy = 0; oy < outH; oy++) {
      for (let ox = 0; ox < outW; ox++) {
        let count = 0;
        for (let ky = 0; ky < kH; ky++) {
          const iy = rowTable[oy * kH + ky] as number;
          if (iy < 0) continue;
          for (let kx = 0; kx < kW; kx++) {
            const ix = colTable[ox * kW + kx] as number;
            if (ix < 0) continue;
            inAt[count] = batchBase + (iy * inW + ix) * C;
            tapAt[count] = (ky * kW + kx) * O;
            count++;
          }
        }
        if (mult === 1) {
          for (let o = 0; o < O; o++) {
            let sum = 0;
            for (let t = 0; t < count; t++)
              sum += (input[(inAt[t] as number) + o] as number) * (kernel[(tapAt[t] as number) + o] as number);
            out[w + o] = sum;
          }
        } else {
          for (let o = 0; o < O; o++) {
            const c = Math.floor(o / mult);
            let sum = 0;
            for (let t = 0; t < count; t++)
              sum += (input[(inAt[t] as number) + c] as number) * (kernel[(tapAt[t] as number) + o] as number);
            out[w + o] = sum;
          }
        }
        w += O;
      }
    }
  }
}

/**
 * im2col for canonical [N, spatial..., C] inputs: row r of the result holds, for output
 * position r, every kernel tap's input channels (taps in row-major kernel order, channels
 * innermost), so it multiplies a [spatial..., I, O] kernel viewed as a [taps*I, O] matrix.
 * Padding, lhs dilation holes and out-of-range taps read as zero.
 */
import type { TypedArray } from "../../array.ts";
import type { ConvGeometry } from "./conv-attributes.ts";

/**
 * Per spatial axis, the input index each (output index, kernel tap) reads, or -1 where it
 * falls on padding or a dilation hole. Flattened as [out * taps + tap].
 */
export function tapTables(g: ConvGeometry): Int32Array[] {
  return g.outSpatial.map((outSize, s) => {
    const taps = g.kernelSpatial[s] as number;
    const table = new Int32Array(outSize * taps);
    const inSize = g.inSpatial[s] as number;
    const lhsDil = g.lhsDilation[s] as number;
    for (let o = 0; o < outSize; o++) {
      for (let k = 0; k < taps; k++) {
        const x = o * (g.strides[s] as number) + k * (g.rhsDilation[s] as number) - (g.padLow[s] as number);
        const inside = x >= 0 && x % lhsDil === 0 && x / lhsDil < inSize;
        table[o * taps + k] = inside ? x / lhsDil : -1;
      }
    }
    return table;
  });
}

export interface Im2colSource {
  /** Canonical [N, spatial..., C] storage. */
  readonly data: TypedArray;
  /** Typed-array slots per element (2 for complex). */
  readonly slots: number;
  readonly batchIndex: number;
  readonly channelOffset: number;
  readonly channelCount: number;
}

/** Fills `col` (rows x taps*channelCount elements) for output positions [rowStart, rowEnd). */
export function im2col(
  g: ConvGeometry,
  tables: Int32Array[],
  src: Im2colSource,
  rowStart: number,
  rowEnd: number,
  col: TypedArray,
): void {
  if (g.spatialRank === 2 && (col instanceof Float32Array || col instanceof Float64Array)) {
    im2col2d(g, tables, src, rowStart, rowEnd, col);
    return;
  }
  const d = g.spatialRank;
  const { slots, channelCount } = src;
  const inChannels = g.inChannels;
  // Element strides of the canonical input's spatial axes, in slots.
  const inStride = new Array<number>(d);
  let stride = inChannels * slots;
  for (let s = d - 1; s >= 0; s--) {
    inStride[s] = stride;
    stride *= g.inSpatial[s] as number;
  }
  const base = src.batchIndex * stride + src.channelOffset * slots;
  const taps = g.kernelSpatial.reduce((p, k) => p * k, 1);
  const run = channelCount * slots;
  const rowLength = taps * run;
  const outIndex = new Array<number>(d).fill(0);
  // Decompose rowStart into an output multi-index; later rows advance it like an odometer.
  for (let s = d - 1, r = rowStart; s >= 0; s--) {
    const size = g.outSpatial[s] as number;
    outIndex[s] = r % size;
    r = Math.floor(r / size);
  }
  const tapIndex = new Array<number>(d).fill(0);
  const data = src.data;
  const zero = col instanceof BigInt64Array || col instanceof BigUint64Array ? 0n : 0;
  for (let row = rowStart; row < rowEnd; row++) {
    let dst = (row - rowStart) * rowLength;
    tapIndex.fill(0);
    for (let t = 0; t < taps; t++) {
      let offset = base;
      for (let s = 0; s < d; s++) {
        const size = g.kernelSpatial[s] as number;
        const at = (tables[s] as Int32Array)[(outIndex[s] as number) * size + (tapIndex[s] as number)] as number;
        if (at < 0) {
          offset = -1;
          break;
        }
        offset += at * (inStride[s] as number);
      }
      if (offset < 0) col.fill(zero as never, dst, dst + run);
      else if (run >= 16) col.set(data.subarray(offset, offset + run) as never, dst);
      else for (let q = 0; q < run; q++) col[dst + q] = data[offset + q] as never;
      dst += run;
      for (let s = d - 1; s >= 0; s--) {
        tapIndex[s] = (tapIndex[s] as number) + 1;
        if ((tapIndex[s] as number) < (g.kernelSpatial[s] as number)) break;
        tapIndex[s] = 0;
      }
    }
    for (let s = d - 1; s >= 0; s--) {
      outIndex[s] = (outIndex[s] as number) + 1;
      if ((outIndex[s] as number) < (g.outSpatial[s] as number)) break;
      outIndex[s] = 0;
    }
  }
}

/**
 * The 2-d float case every image model hits, with plain nested loops: no per-tap odometer or
 * subarray objects, so the copy runs at memory speed (it is most of a 3x3 layer's time).
 */
function im2col2d(
  g: ConvGeometry,
  tables: Int32Array[],
  src: Im2colSource,
  rowStart: number,
  rowEnd: number,
  col: Float32Array | Float64Array,
): void {
  const data = src.data as Float32Array | Float64Array;
  const [outH, outW] = g.outSpatial as [number, number];
  const [kH, kW] = g.kernelSpatial as [number, number];
  const inW = g.inSpatial[1] as number;
  const C = g.inChannels;
  const run = src.channelCount;
  const base = src.batchIndex * (g.inSpatial[0] as number) * inW * C + src.channelOffset;
  const rowTable = tables[0] as Int32Array;
  const colTable = tables[1] as Int32Array;
  // With unit rhs and lhs dilation and every channel read, a kernel row's taps are one span.
  const contiguousTaps = run === C && g.rhsDilation[1] === 1 && g.lhsDilation[1] === 1 && kW > 1;
  let dst = 0;
  for (let row = rowStart; row < rowEnd; row++) {
    const oh = Math.floor(row / outW);
    const ow = row - oh * outW;
    if (oh >= outH) break;
    for (let kh = 0; kh < kH; kh++) {
      const ih = rowTable[oh * kH + kh] as number;
      if (ih < 0) {
        col.fill(0, dst, dst + kW * run);
        dst += kW * run;
        continue;
      }
      const lineBase = base + ih * inW * C;
      const first = colTable[ow * kW] as number;
      const last = colTable[ow * kW + kW - 1] as number;
      if (contiguousTaps && first >= 0 && last >= 0) {
        // All kW taps valid and adjacent: one block copy of kW*C channels.
        const from = lineBase + first * C;
        const span = kW * run;
        // subarray() allocates, which costs more than a short loop.
        if (span >= 128) col.set(data.subarray(from, from + span), dst);
        else for (let q = 0; q < span; q++) col[dst + q] = data[from + q] as number;
        dst += span;
        continue;
      }
      for (let kw = 0; kw < kW; kw++) {
        const iw = colTable[ow * kW + kw] as number;
        if (iw < 0) {
          for (let q = 0; q < run; q++) col[dst + q] = 0;
        } else {
          const from = lineBase + iw * C;
          for (let q = 0; q < run; q++) col[dst + q] = data[from + q] as number;
        }
        dst += run;
      }
    }
  }
}

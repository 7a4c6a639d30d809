/**
 * reduce_window fast path for channels-last pooling (the 3x3/2 max pool of ResNet): a window
 * over the two middle axes of a rank-4 f32, f16 or bf16 array, batch and channel axes untouched. Per output
 * position the valid taps' input offsets are listed once, then each tap is combined into the
 * output's channel run. Max and min give the same result in any order, so this matches the
 * generic tap-by-tap loop exactly (NaNs stay NaN; their sign and payload are not kept).
 */
import { minFloat } from "../../elem/branchless.ts";
import { poolInWasm } from "./pool-wasm.ts";
import type { WindowGeometry } from "./window-geometry.ts";

function isIdentity(table: Int32Array | undefined, size: number): boolean {
  if (!table || table.length !== size) return false;
  for (let i = 0; i < size; i++) if (table[i] !== i) return false;
  return true;
}

/**
 * Runs the pool into `out` (already filled with the init value); false when it does not apply.
 * `type` tells f16 from bf16 storage (both Uint16Array bits); f32 needs none.
 */
export function poolNhwc(
  g: WindowGeometry,
  input: unknown,
  out: unknown,
  kind: "max" | "min",
  type?: "f16" | "bf16",
): boolean {
  const half = type !== undefined && input instanceof Uint16Array && out instanceof Uint16Array;
  if (g.outShape.length !== 4) return false;
  if (!half && !(input instanceof Float32Array && out instanceof Float32Array)) return false;
  const [N, OH, OW, C] = g.outShape as [number, number, number, number];
  if (g.window[0] !== 1 || g.window[3] !== 1 || g.inShape[0] !== N || g.inShape[3] !== C) return false;
  if (!isIdentity(g.tables[0], N) || !isIdentity(g.tables[3], C)) return false;
  const IH = g.inShape[1] as number;
  const IW = g.inShape[2] as number;
  const kH = g.window[1] as number;
  const kW = g.window[2] as number;
  const tH = g.tables[1] as Int32Array;
  const tW = g.tables[2] as Int32Array;
  const infinityBits = type === "bf16" ? 0x7f80 : 0x7c00;
  const shape = { N, OH, OW, C, IH, IW, kH, kW, rowTable: tH, colTable: tW };
  if (poolInWasm(shape, input as Uint16Array | Float32Array, out as Uint16Array | Float32Array, kind, infinityBits))
    return true;
  const offsets = new Int32Array(kH * kW);
  const inKeys = half
    ? halfKeys(input, infinityBits, kind, 0)
    : kind === "max"
      ? toKeys(input as Float32Array, 0)
      : null;
  const outKeys = half ? halfKeys(out, infinityBits, kind, 1) : kind === "max" ? toKeys(out as Float32Array, 1) : null;
  let o = 0;
  for (let n = 0; n < N; n++) {
    for (let oh = 0; oh < OH; oh++) {
      for (let ow = 0; ow < OW; ow++, o += C) {
        let taps = 0;
        for (let kh = 0; kh < kH; kh++) {
          const ih = tH[oh * kH + kh] as number;
          if (ih < 0) continue;
          for (let kw = 0; kw < kW; kw++) {
            const iw = tW[ow * kW + kw] as number;
            if (iw >= 0) offsets[taps++] = ((n * IH + ih) * IW + iw) * C;
          }
        }
        if (inKeys && outKeys) maxKeys(inKeys, outKeys, offsets, taps, o, C);
        else minOver(input as Float32Array, out as Float32Array, offsets, taps, o, C);
      }
    }
  }
  if (outKeys && half) fromHalfKeys(outKeys, out as Uint16Array, kind);
  else if (outKeys) fromKeys(outKeys, out as Float32Array);
  return true;
}

/**
 * f32 max as an integer max over order-preserving keys: the bits of x >= 0 as they are, of
 * x < 0 with the magnitude bits flipped, so signed integer order is float order (-0 below +0,
 * as Math.max wants). A NaN first loses its sign, so every NaN sorts above +inf and wins, as
 * in Math.max. The integer max `m ^ ((m ^ k) & -(k > m))` has no branch (a float max branch
 * mispredicts on ReLU outputs), and one conversion per element costs less than a branch-free
 * float max per window tap (elem/branchless.ts): about 4 ms against 7 for ResNet's pool.
 */
const scratch: Int32Array[] = [new Int32Array(0), new Int32Array(0)];

function toKeys(data: Float32Array, which: 0 | 1): Int32Array {
  let keys = scratch[which] as Int32Array;
  if (keys.length < data.length) {
    keys = new Int32Array(data.length);
    scratch[which] = keys;
  }
  const bits = new Int32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < bits.length; i++) {
    let b = bits[i] as number;
    const magnitude = b & 0x7fffffff;
    const nan = (0x7f800000 - magnitude) >> 31; // all ones for a NaN
    b = (b & ~nan) | (magnitude & nan);
    keys[i] = b ^ ((b >> 31) & 0x7fffffff);
  }
  return keys;
}

/** The key map is its own inverse. */
function fromKeys(keys: Int32Array, out: Float32Array): void {
  const bits = new Int32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < bits.length; i++) {
    const k = keys[i] as number;
    bits[i] = k ^ ((k >> 31) & 0x7fffffff);
  }
}

/**
 * The same order-preserving keys for f16 / bf16 bits (sign and magnitude in 16 bits): the
 * magnitude bits of a negative value flipped after sign extension, so -0 is -1 and +0 is 0.
 * A NaN is made to win as Math.max and Math.min want: positive for max (above +inf), negative
 * for min (below -inf). For min the keys are complemented, which reverses their order, so one
 * integer max serves both.
 */
function halfKeys(data: Uint16Array, infinityBits: number, kind: "max" | "min", which: 0 | 1): Int32Array {
  let keys = scratch[which] as Int32Array;
  if (keys.length < data.length) {
    keys = new Int32Array(data.length);
    scratch[which] = keys;
  }
  const nanSign = kind === "max" ? 0 : 0x8000;
  const flip = kind === "max" ? 0 : -1;
  for (let i = 0; i < data.length; i++) {
    let b = data[i] as number;
    const magnitude = b & 0x7fff;
    const nan = (infinityBits - magnitude) >> 31; // all ones for a NaN
    b = (b & ~nan) | ((magnitude | nanSign) & nan);
    const s = (b << 16) >> 16;
    keys[i] = s ^ ((s >> 31) & 0x7fff) ^ flip;
  }
  return keys;
}

function fromHalfKeys(keys: Int32Array, out: Uint16Array, kind: "max" | "min"): void {
  const flip = kind === "max" ? 0 : -1;
  for (let i = 0; i < out.length; i++) {
    const k = (keys[i] as number) ^ flip;
    out[i] = (k ^ ((k >> 31) & 0x7fff)) & 0xffff;
  }
}

function maxKeys(input: Int32Array, out: Int32Array, offsets: Int32Array, taps: number, o: number, C: number) {
  for (let t = 0; t < taps; t++) {
    const from = offsets[t] as number;
    for (let c = 0; c < C; c++) {
      const m = out[o + c] as number;
      const k = input[from + c] as number;
      out[o + c] = m ^ ((m ^ k) & -+(k > m));
    }
  }
}

// Taps outside, channels inside: each channel's update is independent of the previous one,
// so the branch-free min (a store and a dependent load) pipelines.
function minOver(input: Float32Array, out: Float32Array, offsets: Int32Array, taps: number, o: number, C: number) {
  for (let t = 0; t < taps; t++) {
    const from = offsets[t] as number;
    for (let c = 0; c < C; c++) out[o + c] = minFloat(out[o + c] as number, input[from + c] as number);
  }
}

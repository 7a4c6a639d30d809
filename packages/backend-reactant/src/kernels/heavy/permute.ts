/**
 * Axis permutation of raw storage, used to bring operands into the [batch, rows, cols] layout
 * GEMM wants. Works on any typed array; `slots` is 2 for interleaved complex.
 */
import { type TypedArray, strides } from "../../array.ts";
import { copyLoopFor } from "../strided-copy.ts";

/** A zeroed array of the same class as `data`, over its own ArrayBuffer. */
export function sameKind<T extends TypedArray>(data: T, length: number): T {
  const Ctor = data.constructor as new (buffer: ArrayBuffer) => T;
  return new Ctor(new ArrayBuffer(length * data.BYTES_PER_ELEMENT));
}

export function isIdentity(perm: readonly number[]): boolean {
  return perm.every((p, i) => p === i);
}

/**
 * out[i0..] = in[permuted]; result shape is perm.map(p => shape[p]). Returns the input when perm
 * is the identity. `into` (same class and length as `data`) is written instead of a new array.
 */
export function permuteData<T extends TypedArray>(
  data: T,
  shape: readonly number[],
  perm: readonly number[],
  slots = 1,
  into?: T,
): T {
  if (isIdentity(perm)) return data;
  const inStrides = strides(shape);
  const outShape = perm.map((p) => shape[p] as number);
  const out = into ?? sameKind(data, data.length);
  const bits = bitExact(data, slots);
  const words = bits.slots;
  const stepIn = perm.map((p) => (inStrides[p] as number) * words);
  const total = data.length / slots;
  if (total === 0) return out;
  // The output in order, innermost axis a strided run, outer axes an odometer; bit views keep
  // NaN payloads, and the generated loop sees one view class.
  const writable = bitExact(out, slots).view;
  copyLoopFor(bits.view, words)(bits.view, writable, 0, stepIn, outShape);
  return out;
}

export function product(values: readonly number[]): number {
  let p = 1;
  for (const v of values) p *= v;
  return p;
}

/**
 * An integer view of the same bytes for moving elements: reading a NaN out of a float array
 * into a JS number may canonicalise it, which would lose its sign and payload. `slots` is
 * scaled for f64 (two 32-bit words per slot). Signed words: an unsigned view reads every
 * negative float as a number above 2^31, which JavaScriptCore holds as a double, and a copy
 * loop compiled for int32 words keeps bailing out on those (several times slower).
 */
export function bitExact(data: TypedArray, slots: number): { view: TypedArray; slots: number } {
  if (data instanceof Float32Array) return { view: new Int32Array(data.buffer, data.byteOffset, data.length), slots };
  if (data instanceof Float64Array)
    return { view: new Int32Array(data.buffer, data.byteOffset, 2 * data.length), slots: 2 * slots };
  return { view: data, slots };
}

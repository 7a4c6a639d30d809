/**
 * Axis permutation of raw storage, used to bring operands into the [batch, rows, cols] layout
 * GEMM wants. Works on any typed array; `slots` is 2 for interleaved complex.
 */
import { type TypedArray, strides } from "../../array.ts";

/** A zeroed array of the same class as `data`, over its own ArrayBuffer. */
export function sameKind<T extends TypedArray>(data: T, length: number): T {
  const Ctor = data.constructor as new (buffer: ArrayBuffer) => T;
  return new Ctor(new ArrayBuffer(length * data.BYTES_PER_ELEMENT));
}

export function isIdentity(perm: readonly number[]): boolean {
  return perm.every((p, i) => p === i);
}

/** out[i0..] = in[permuted]; result shape is perm.map(p => shape[p]). Returns the input when perm is the identity. */
export function permuteData<T extends TypedArray>(
  data: T,
  shape: readonly number[],
  perm: readonly number[],
  slots = 1,
): T {
  if (isIdentity(perm)) return data;
  const rank = shape.length;
  const inStrides = strides(shape);
  const outShape = perm.map((p) => shape[p] as number);
  const out = sameKind(data, data.length);
  const bits = bitExact(data, slots);
  const words = bits.slots;
  const stepIn = perm.map((p) => (inStrides[p] as number) * words);
  const total = data.length / slots;
  if (total === 0) return out;
  const writable = bitExact(out, slots).view as unknown as { [i: number]: unknown };
  const readable = bits.view as unknown as { [i: number]: unknown };
  const counter = new Array<number>(rank).fill(0);
  const last = rank - 1;
  const innerLength = outShape[last] as number;
  const innerStep = stepIn[last] as number;
  let source = 0;
  let target = 0;
  // Walk the output in order; the innermost axis is a strided copy, outer axes an odometer.
  for (;;) {
    for (let j = 0, s = source; j < innerLength; j++, s += innerStep) {
      for (let q = 0; q < words; q++) writable[target++] = readable[s + q];
    }
    let axis = last - 1;
    for (; axis >= 0; axis--) {
      source += stepIn[axis] as number;
      counter[axis] = (counter[axis] as number) + 1;
      if ((counter[axis] as number) < (outShape[axis] as number)) break;
      source -= (stepIn[axis] as number) * (outShape[axis] as number);
      counter[axis] = 0;
    }
    if (axis < 0) return out;
  }
}

export function product(values: readonly number[]): number {
  let p = 1;
  for (const v of values) p *= v;
  return p;
}

/**
 * An integer view of the same bytes for moving elements: reading a NaN out of a float array
 * into a JS number may canonicalise it, which would lose its sign and payload. `slots` is
 * scaled for f64 (two 32-bit words per slot).
 */
export function bitExact(data: TypedArray, slots: number): { view: TypedArray; slots: number } {
  if (data instanceof Float32Array) return { view: new Uint32Array(data.buffer, data.byteOffset, data.length), slots };
  if (data instanceof Float64Array)
    return { view: new Uint32Array(data.buffer, data.byteOffset, 2 * data.length), slots: 2 * slots };
  return { view: data, slots };
}

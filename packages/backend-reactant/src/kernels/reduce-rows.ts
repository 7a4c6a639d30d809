import type { ReducerKind } from "../array.ts";
import { maxFloat, minFloat } from "../elem/branchless.ts";

/**
 * Row reductions (out[k] = init op row k, in index order) for f32 / f64 with add, max and min:
 * the common case of layer norm means and softmax sums and maxima over the last axis. One
 * small function per array class keeps each loop monomorphic; the shared generic loop sees
 * every element type and runs several times slower. f32 sums round after every step like the
 * generic path (Math.fround of the f64 sum of two floats is the correctly rounded f32 sum).
 */
type Rows<T> = (s: T, o: T, K: number, R: number, start: number) => void;

function addF32(s: Float32Array, o: Float32Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc = Math.fround(acc + (s[p] as number));
    o[k] = acc;
  }
}
function addF64(s: Float64Array, o: Float64Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc += s[p] as number;
    o[k] = acc;
  }
}
/**
 * Maxima and minima skip an element that cannot change the running value (strictly below the
 * maximum, above the minimum: neither a NaN nor a zero of the other sign) with one comparison,
 * a branch that softmax rows predict well, and take the branch-free step (Math.max's exact
 * result) only for the others: the same result element by element, 2x faster than stepping on
 * every element.
 */
function maxF32(s: Float32Array, o: Float32Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (const end = p + R; p < end; p++) {
      const v = s[p] as number;
      if (v < acc) continue;
      acc = maxFloat(acc, v);
    }
    o[k] = acc;
  }
}
function maxF64(s: Float64Array, o: Float64Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (const end = p + R; p < end; p++) {
      const v = s[p] as number;
      if (v < acc) continue;
      acc = maxFloat(acc, v);
    }
    o[k] = acc;
  }
}
function minF32(s: Float32Array, o: Float32Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (const end = p + R; p < end; p++) {
      const v = s[p] as number;
      if (v > acc) continue;
      acc = minFloat(acc, v);
    }
    o[k] = acc;
  }
}
function minF64(s: Float64Array, o: Float64Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (const end = p + R; p < end; p++) {
      const v = s[p] as number;
      if (v > acc) continue;
      acc = minFloat(acc, v);
    }
    o[k] = acc;
  }
}

const F32: Partial<Record<NonNullable<ReducerKind>, Rows<Float32Array>>> = { add: addF32, max: maxF32, min: minF32 };
const F64: Partial<Record<NonNullable<ReducerKind>, Rows<Float64Array>>> = { add: addF64, max: maxF64, min: minF64 };

/** Reduces [K, R] rows into `out` when a specialised loop exists; false otherwise. */
export function reduceFloatRows(
  kind: ReducerKind,
  src: unknown,
  out: unknown,
  K: number,
  R: number,
  start: number,
): boolean {
  if (kind === null) return false;
  if (src instanceof Float32Array && out instanceof Float32Array) {
    const f = F32[kind];
    if (f) f(src, out, K, R, start);
    return f !== undefined;
  }
  if (src instanceof Float64Array && out instanceof Float64Array) {
    const f = F64[kind];
    if (f) f(src, out, K, R, start);
    return f !== undefined;
  }
  return false;
}

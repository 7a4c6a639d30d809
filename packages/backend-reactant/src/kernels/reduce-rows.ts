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
function maxF32(s: Float32Array, o: Float32Array, K: number, R: number, start: number): void {
  let k = 0;
  // Four rows at once: the branch-free maximum is a chain of dependent steps, and four
  // independent chains overlap (1.8x on softmax rows); each row keeps its index order.
  for (; k + 4 <= K; k += 4) {
    const p0 = k * R;
    const p1 = p0 + R;
    const p2 = p1 + R;
    const p3 = p2 + R;
    let a0 = start;
    let a1 = start;
    let a2 = start;
    let a3 = start;
    for (let r = 0; r < R; r++) {
      a0 = maxFloat(a0, s[p0 + r] as number);
      a1 = maxFloat(a1, s[p1 + r] as number);
      a2 = maxFloat(a2, s[p2 + r] as number);
      a3 = maxFloat(a3, s[p3 + r] as number);
    }
    o[k] = a0;
    o[k + 1] = a1;
    o[k + 2] = a2;
    o[k + 3] = a3;
  }
  for (let p = k * R; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc = maxFloat(acc, s[p] as number);
    o[k] = acc;
  }
}
function maxF64(s: Float64Array, o: Float64Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc = maxFloat(acc, s[p] as number);
    o[k] = acc;
  }
}
function minF32(s: Float32Array, o: Float32Array, K: number, R: number, start: number): void {
  let k = 0;
  // Four rows at once, as in maxF32.
  for (; k + 4 <= K; k += 4) {
    const p0 = k * R;
    const p1 = p0 + R;
    const p2 = p1 + R;
    const p3 = p2 + R;
    let a0 = start;
    let a1 = start;
    let a2 = start;
    let a3 = start;
    for (let r = 0; r < R; r++) {
      a0 = minFloat(a0, s[p0 + r] as number);
      a1 = minFloat(a1, s[p1 + r] as number);
      a2 = minFloat(a2, s[p2 + r] as number);
      a3 = minFloat(a3, s[p3 + r] as number);
    }
    o[k] = a0;
    o[k + 1] = a1;
    o[k + 2] = a2;
    o[k + 3] = a3;
  }
  for (let p = k * R; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc = minFloat(acc, s[p] as number);
    o[k] = acc;
  }
}
function minF64(s: Float64Array, o: Float64Array, K: number, R: number, start: number): void {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++, p++) acc = minFloat(acc, s[p] as number);
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

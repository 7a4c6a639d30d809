import type { ReducerKind } from "../array.ts";
import { maxFloat, minFloat } from "../elem/branchless.ts";
import { ownFunction } from "./own-function.ts";

/**
 * Reductions over a run of consecutive middle axes, [A, R, B] -> [A, B] with B > 1 (a mean
 * over a window's rows, a sum over a sequence axis), without first transposing the operand:
 * the output row of B accumulates each of the R input rows in turn, so every output element
 * still combines its inputs in index order and stores (rounds to f32) after each step, exactly
 * as the row loops of reduce-rows.ts do.
 */
type Middle<T> = (s: T, o: T, A: number, R: number, B: number, start: number) => void;

/**
 * The loop for one class and reducer, with code of its own (own-function.ts): one closure per
 * reducer shared by f32 and f64 would be compiled for both classes and both reducers' calls.
 */
function middleLoop(cls: "f32" | "f64", op: "add" | "max" | "min"): Middle<Float32Array | Float64Array> {
  const step = op === "add" ? "o[base + b] + s[p]" : `${op === "max" ? "maxFloat" : "minFloat"}(o[base + b], s[p])`;
  const make = ownFunction(
    `reduce middle ${cls} ${op}`,
    ["maxFloat", "minFloat"],
    `return function middle(s, o, A, R, B, start) {
  for (let a = 0; a < A; a++) {
    const base = a * B;
    o.fill(start, base, base + B);
    for (let r = 0, p = a * R * B; r < R; r++)
      for (let b = 0; b < B; b++, p++) o[base + b] = ${step};
  }
};`,
  ) as (max: typeof maxFloat, min: typeof minFloat) => Middle<Float32Array | Float64Array>;
  return make(maxFloat, minFloat);
}

const F32 = { add: middleLoop("f32", "add"), max: middleLoop("f32", "max"), min: middleLoop("f32", "min") };
const F64 = { add: middleLoop("f64", "add"), max: middleLoop("f64", "max"), min: middleLoop("f64", "min") };

/** The [A, R, B] split when `dims` are consecutive axes with at least one kept axis after them. */
export function middleSplit(shape: readonly number[], dims: readonly number[]): [number, number, number] | null {
  if (dims.length === 0) return null;
  const sorted = [...dims].sort((x, y) => x - y);
  const first = sorted[0] as number;
  const last = sorted[sorted.length - 1] as number;
  if (last - first !== sorted.length - 1 || last >= shape.length - 1) return null;
  const prod = (from: number, to: number) => shape.slice(from, to).reduce((p, n) => p * n, 1);
  return [prod(0, first), prod(first, last + 1), prod(last + 1, shape.length)];
}

/** Reduces [A, R, B] into `out` ([A, B]) for f32 / f64 add, max and min; false otherwise. */
export function reduceFloatMiddle(
  kind: ReducerKind,
  src: unknown,
  out: unknown,
  [A, R, B]: [number, number, number],
  start: number,
): boolean {
  if (kind !== "add" && kind !== "max" && kind !== "min") return false;
  if (src instanceof Float32Array && out instanceof Float32Array) F32[kind](src, out, A, R, B, start);
  else if (src instanceof Float64Array && out instanceof Float64Array) F64[kind](src, out, A, R, B, start);
  else return false;
  return true;
}

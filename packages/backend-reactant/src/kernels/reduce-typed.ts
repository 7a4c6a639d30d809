import type { ReducerKind, TypedArray } from "../array.ts";
import { ownFunction } from "./own-function.ts";

/**
 * Row reductions (out[k] = init op row k, in index order) for the storage classes and reducers
 * without a loop of their own (reduce-rows.ts, reduce-half.ts): integers, booleans (a mask's
 * `and` over an axis), f32 / f64 products. The accumulator lives in a one-element array of the
 * operand's class, so storing it after every step rounds (f32) or wraps (integers) exactly as
 * the element type does. One generated loop per class and reducer (own-function.ts): the one
 * loop all of them shared was compiled for every class at once and ran several times slower.
 */
export type TypedRows = (s: TypedArray, o: TypedArray, K: number, R: number, start: number) => void;

type Mode = "float" | "int" | "bool";

/** `a op b` for `mode`, as reduce.ts's generic combine computes it. */
function stepExpr(kind: NonNullable<ReducerKind>, mode: Mode): string | null {
  switch (kind) {
    case "add":
      return mode === "bool" ? "a | b" : "a + b";
    case "mul":
      return mode === "bool" ? "a & b" : mode === "int" ? "Math.imul(a, b)" : "a * b";
    case "max":
      // Integers are never NaN nor -0, so the float rule's extra cases never apply to them.
      return mode === "float" ? null : "a > b ? a : b";
    case "min":
      return mode === "float" ? null : "a < b ? a : b";
    case "and":
      return "a & b";
    case "or":
      return "a | b";
    case "xor":
      return "a ^ b";
  }
}

const LOOPS = new Map<string, TypedRows | null>();

/** The loop for `s`'s class and `kind`, or null where reduce.ts's generic loop stays (float max / min, BigInt storage). */
export function typedRowsFor(s: TypedArray, kind: ReducerKind, mode: Mode): TypedRows | null {
  if (kind === null || s instanceof BigInt64Array || s instanceof BigUint64Array) return null;
  const key = `${s.constructor.name} ${kind} ${mode}`;
  let loop = LOOPS.get(key);
  if (loop === undefined) {
    const expr = stepExpr(kind, mode);
    const Ctor = s.constructor as new (n: number) => TypedArray;
    loop =
      expr === null
        ? null
        : ((
            ownFunction(
              `reduce rows ${key}`,
              ["acc"],
              `return function rows(s, o, K, R, start) {
  for (let k = 0, p = 0; k < K; k++) {
    acc[0] = start;
    for (const end = p + R; p < end; p++) {
      const a = acc[0];
      const b = s[p];
      acc[0] = ${expr};
    }
    o[k] = acc[0];
  }
};`,
            ) as (acc: TypedArray) => TypedRows
          )(new Ctor(1)) as TypedRows);
    LOOPS.set(key, loop);
  }
  return loop;
}

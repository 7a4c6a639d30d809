import type { ReducerKind } from "../array.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { fastEncodeBf16, fastEncodeF16, fastRoundBf16, fastRoundF16 } from "../elem/half-bits.ts";
import { maxFloat, minFloat } from "../elem/branchless.ts";
import { ownFunction } from "./own-function.ts";

/**
 * Row reductions (out[k] = init op row k, in index order) over bf16 / f16 storage for add, max
 * and min: a bf16 model's softmax maxima and layer-norm sums. Elements are decoded through the
 * type's table and the accumulator is a number rounded to the type after every step, as the
 * generic loop of reduce.ts does, so the bits are the same; a maximum or minimum is always one
 * of its (representable) operands, so it needs no rounding, only the final encode. One function
 * per type and kind keeps every loop monomorphic: the shared generic loop saw every element
 * type and took some 8 ns per element.
 */
type HalfRows = (s: Uint16Array, o: Uint16Array, K: number, R: number, start: number) => void;

// Maxima and minima skip the elements that cannot change the running value, as in reduce-rows.ts.
const STEPS = {
  add: "acc = round(acc + decode[s[p]]);",
  max: "const v = decode[s[p]]; if (v < acc) continue; acc = maxFloat(acc, v);",
  min: "const v = decode[s[p]]; if (v > acc) continue; acc = minFloat(acc, v);",
};

/** A loop of its own per type and kind (own-function.ts: the two types' texts are the same, their tables not). */
function rowsLoop(type: "bf16" | "f16", kind: keyof typeof STEPS): HalfRows {
  const source = `return function rows(s, o, K, R, start) {
  for (let k = 0, p = 0; k < K; k++) {
    let acc = start;
    for (const end = p + R; p < end; p++) { ${STEPS[kind]} }
    o[k] = encode(acc);
  }
};`;
  const make = ownFunction(
    `reduce rows ${type} ${kind}`,
    ["decode", "round", "encode", "maxFloat", "minFloat"],
    source,
  );
  return (make as (...args: unknown[]) => HalfRows)(
    type === "bf16" ? BF16_TO_NUMBER : F16_TO_NUMBER,
    type === "bf16" ? fastRoundBf16 : fastRoundF16,
    type === "bf16" ? fastEncodeBf16 : fastEncodeF16,
    maxFloat,
    minFloat,
  ) as HalfRows;
}

const loops = (type: "bf16" | "f16"): Partial<Record<NonNullable<ReducerKind>, HalfRows>> => ({
  add: rowsLoop(type, "add"),
  max: rowsLoop(type, "max"),
  min: rowsLoop(type, "min"),
});
const BF16 = loops("bf16");
const F16 = loops("f16");

/**
 * Reduces [K, R] rows of bf16 / f16 bits into `out` when a specialised loop exists (`start` is
 * the init's value as a number); false otherwise.
 */
export function reduceHalfRows(
  kind: ReducerKind,
  type: "bf16" | "f16",
  src: Uint16Array,
  out: Uint16Array,
  K: number,
  R: number,
  start: number,
): boolean {
  if (kind === null) return false;
  const rows = (type === "bf16" ? BF16 : F16)[kind];
  if (rows) rows(src, out, K, R, start);
  return rows !== undefined;
}

import type { Region } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";

/**
 * The arg-max / arg-min region JAX writes for jnp.argmax / argmin over floats (value, index)
 * pairs: keep the accumulated pair when its value is greater (less) or NaN, or equal with the
 * smaller index; else take the new pair. Recognised op by op, so a fold over a row can run as a
 * loop of numbers instead of the region's ops on ever smaller arrays (about 130 ns an element
 * at a 256-wide row). Elements are folded in index order, the accumulator on the left, as
 * XLA's CPU loops fold them: the index is the same in any order (the rule is a total order on
 * pairs), and so is the value except which zero is kept when zeros of both signs tie.
 */
export type ArgReduce = "argmax" | "argmin";

const direction = (op: Region["ops"][number]): string => String(op.attrs.comparison_direction ?? "");
const floatCompare = (op: Region["ops"][number]): boolean =>
  op.name === "stablehlo.compare" && String(op.attrs.compare_type ?? "FLOAT") === "FLOAT";

/** "argmax" / "argmin" when `region` is exactly that rule over args (value, index, value, index). */
export function argReduceKind(region: Region): ArgReduce | null {
  const args = region.args;
  const ops = region.ops;
  if (args.length !== 4 || ops.length !== 10) return null;
  const [a, ia, b, ib] = args.map((x) => x.name) as [string, string, string, string];
  const elem = args.map((x) => (isTensorType(x.type) ? x.type.elem : null));
  if (elem[0] !== "f32" || elem[2] !== "f32" || elem[1] !== "i32" || elem[3] !== "i32") return null;
  const r = ops.map((op) => op.results[0]);
  const is = (i: number, name: string, operands: (string | undefined)[]) => {
    const op = ops[i];
    return (
      op !== undefined &&
      op.name === name &&
      op.operands.length === operands.length &&
      op.operands.every((x, j) => x === operands[j])
    );
  };
  const first = ops[0];
  if (!first || !floatCompare(first)) return null;
  const kind = direction(first) === "GT" ? "argmax" : direction(first) === "LT" ? "argmin" : null;
  const ok =
    kind !== null &&
    is(0, "stablehlo.compare", [a, b]) &&
    is(1, "stablehlo.compare", [a, a]) &&
    floatCompare(ops[1] as Region["ops"][number]) &&
    direction(ops[1] as Region["ops"][number]) === "NE" &&
    is(2, "stablehlo.or", [r[0], r[1]]) &&
    is(3, "stablehlo.compare", [a, b]) &&
    floatCompare(ops[3] as Region["ops"][number]) &&
    direction(ops[3] as Region["ops"][number]) === "EQ" &&
    is(4, "stablehlo.compare", [ia, ib]) &&
    direction(ops[4] as Region["ops"][number]) === "LT" &&
    String((ops[4] as Region["ops"][number]).attrs.compare_type ?? "SIGNED") === "SIGNED" &&
    is(5, "stablehlo.and", [r[3], r[4]]) &&
    is(6, "stablehlo.or", [r[2], r[5]]) &&
    is(7, "stablehlo.select", [r[2], a, b]) &&
    is(8, "stablehlo.select", [r[6], ia, ib]) &&
    (ops[9]?.name === "stablehlo.return" || ops[9]?.name === "func.return") &&
    is(9, ops[9]?.name as string, [r[7], r[8]]);
  return ok ? kind : null;
}

/**
 * Folds [K, R] rows of values and indices with the rule, starting from (init, initIndex):
 * values[k * R + r], indices[k * R + r].
 */
export function argReduceRows(
  kind: ArgReduce,
  values: Float32Array,
  indices: Int32Array,
  K: number,
  R: number,
  init: number,
  initIndex: number,
  outValues: Float32Array,
  outIndices: Int32Array,
): void {
  const max = kind === "argmax";
  for (let k = 0, p = 0; k < K; k++) {
    let acc = init;
    let at = initIndex;
    for (const end = p + R; p < end; p++) {
      const v = values[p] as number;
      const i = indices[p] as number;
      // biome-ignore lint/suspicious/noSelfCompare: acc !== acc is the NaN test the region makes
      const keep = (max ? acc > v : acc < v) || acc !== acc;
      if (!keep) {
        if (!(acc === v && at < i)) at = i;
        acc = v;
      }
    }
    outValues[k] = acc;
    outIndices[k] = at;
  }
}

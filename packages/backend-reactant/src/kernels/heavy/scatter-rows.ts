/**
 * Scatter update regions the engine runs as plain loops over contiguous runs of a window:
 * the reducers region.ts recognises (add, mul, max, min) and `return %update` (a `.at[].set`),
 * on element types whose arithmetic a typed-array store rounds or wraps exactly (f32 / f64
 * computed in f64 and stored, integers up to 32 bits wrapping modulo their width).
 */
import type { ElemType, ReducerKind, TypedArray } from "../../array.ts";
import type { Region } from "@xlaserve/stablehlo";
import { maxFloat, minFloat } from "../../elem/branchless.ts";

/** target[t..t+n) = update(target[t..t+n), source[s..s+n)) */
export type RowUpdate = (target: TypedArray, t: number, source: TypedArray, s: number, n: number) => void;

export type UpdateKind = ReducerKind | "replace";

/** The region's kind: a recognised reducer, `replace` where it returns its update argument unchanged. */
export function scatterUpdateKind(region: Region, reducer: ReducerKind): UpdateKind {
  if (reducer !== null) return reducer;
  const [ret] = region.ops;
  const update = region.args[1];
  if (region.args.length === 2 && region.ops.length === 1 && ret && update) {
    if (ret.operands.length === 1 && ret.operands[0] === update.name) return "replace";
  }
  return null;
}

const SMALL_INTS = new Set<ElemType>(["i8", "i16", "i32", "ui8", "ui16", "ui32"]);

/** The row loop for `kind` on `type`, or null where the general path must run. */
export function rowUpdater(kind: UpdateKind, type: ElemType): RowUpdate | null {
  const float = type === "f32" || type === "f64";
  if (!float && !SMALL_INTS.has(type)) return null;
  switch (kind) {
    case "replace":
      return (t, ti, s, si, n) => {
        for (let k = 0; k < n; k++) t[ti + k] = s[si + k] as number;
      };
    case "add":
      return (t, ti, s, si, n) => {
        for (let k = 0; k < n; k++) t[ti + k] = (t[ti + k] as number) + (s[si + k] as number);
      };
    case "mul":
      if (float)
        return (t, ti, s, si, n) => {
          for (let k = 0; k < n; k++) t[ti + k] = (t[ti + k] as number) * (s[si + k] as number);
        };
      return (t, ti, s, si, n) => {
        for (let k = 0; k < n; k++) t[ti + k] = Math.imul(t[ti + k] as number, s[si + k] as number);
      };
    case "max": {
      const op = float ? maxFloat : Math.max;
      return (t, ti, s, si, n) => {
        for (let k = 0; k < n; k++) t[ti + k] = op(t[ti + k] as number, s[si + k] as number);
      };
    }
    case "min": {
      const op = float ? minFloat : Math.min;
      return (t, ti, s, si, n) => {
        for (let k = 0; k < n; k++) t[ti + k] = op(t[ti + k] as number, s[si + k] as number);
      };
    }
    default:
      return null;
  }
}

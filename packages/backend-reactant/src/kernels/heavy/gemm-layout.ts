/**
 * Brings an operand into the two-matrix-axes layout GEMM reads: [batch..., first..., second...]
 * as a row-major batch of first x second matrices, or, when the data already sits as
 * [batch..., second..., first...], uses it as is with the transpose flag set (no copy). Which
 * of the two (or a permutation) an operand needs depends only on its axes, so it is decided
 * once (`orientation`) and applied per call (`orientData`).
 */
import type { TypedArray } from "../../array.ts";
import { isIdentity, permuteData } from "./permute.ts";

export interface Oriented {
  readonly data: TypedArray;
  /** The matrices are stored second x first (GEMM's trans flag). */
  readonly transposed: boolean;
}

export interface Orientation {
  readonly transposed: boolean;
  /** The permutation into [batch..., first..., second...], or null when the data is used as stored. */
  readonly permute: readonly number[] | null;
}

export function orientation(
  batchAxes: readonly number[],
  firstAxes: readonly number[],
  secondAxes: readonly number[],
): Orientation {
  const straight = [...batchAxes, ...firstAxes, ...secondAxes];
  if (isIdentity(straight)) return { transposed: false, permute: null };
  if (isIdentity([...batchAxes, ...secondAxes, ...firstAxes])) return { transposed: true, permute: null };
  return { transposed: false, permute: straight };
}

export function orientData(data: TypedArray, shape: readonly number[], o: Orientation, slots: number): Oriented {
  if (o.permute === null) return { data, transposed: o.transposed };
  return { data: permuteData(data, shape, o.permute, slots), transposed: false };
}

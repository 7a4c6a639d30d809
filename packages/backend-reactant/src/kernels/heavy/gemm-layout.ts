/**
 * Brings an operand into the two-matrix-axes layout GEMM reads: [batch..., first..., second...]
 * as a row-major batch of first x second matrices, or, when the data already sits as
 * [batch..., second..., first...], uses it as is with the transpose flag set (no copy).
 */
import type { TypedArray } from "../../array.ts";
import { isIdentity, permuteData } from "./permute.ts";

export interface Oriented {
  readonly data: TypedArray;
  /** The matrices are stored second x first (GEMM's trans flag). */
  readonly transposed: boolean;
}

export function orientOperand(
  data: TypedArray,
  shape: readonly number[],
  batchAxes: readonly number[],
  firstAxes: readonly number[],
  secondAxes: readonly number[],
  slots: number,
): Oriented {
  const straight = [...batchAxes, ...firstAxes, ...secondAxes];
  if (isIdentity(straight)) return { data, transposed: false };
  if (isIdentity([...batchAxes, ...secondAxes, ...firstAxes])) return { data, transposed: true };
  return { data: permuteData(data, shape, straight, slots), transposed: false };
}

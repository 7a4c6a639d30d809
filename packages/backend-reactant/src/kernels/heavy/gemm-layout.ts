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

/**
 * An operand that would need a permutation, read in place instead: each batch's matrix starts
 * at its own element offset and its rows are `ld` apart. Untransposed, the GEMM gets the very
 * shape and flags the permuted copy would have had (only the leading dimension and offset
 * differ, which OpenBLAS's packing reads through), so the same bits. Transposed views are for
 * the small loops only (their sums do not depend on the layout; OpenBLAS's kernels for the two
 * flags can round differently).
 */
export interface InPlace {
  readonly offsets: Int32Array;
  readonly ld: number;
  /** The matrices are stored second x first (GEMM's trans flag). */
  readonly transposed: boolean;
}

/** The stride of an axis group flattened to one axis, "any" when it holds one element, null when it does not flatten. */
function groupStride(
  shape: readonly number[],
  strides: readonly number[],
  axes: readonly number[],
): number | "any" | null {
  const real = axes.filter((d) => (shape[d] as number) !== 1);
  for (let i = 0; i + 1 < real.length; i++) {
    const a = real[i] as number;
    const b = real[i + 1] as number;
    if (strides[a] !== (strides[b] as number) * (shape[b] as number)) return null;
  }
  const last = real[real.length - 1];
  return last === undefined ? "any" : (strides[last] as number);
}

/**
 * The in-place view of an operand of `shape` as [batch..., first..., second...] matrices, or
 * null where neither group is its innermost run (the second, or with `transposed` allowed the
 * first) or a group does not flatten. Worth it only where `orientation` would permute.
 */
export function inPlaceView(
  shape: readonly number[],
  batchAxes: readonly number[],
  firstAxes: readonly number[],
  secondAxes: readonly number[],
  allowTransposed: boolean,
): InPlace | null {
  const strides: number[] = new Array(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = (strides[d + 1] as number) * (shape[d + 1] as number);
  const first = groupStride(shape, strides, firstAxes);
  const second = groupStride(shape, strides, secondAxes);
  if (first === null || second === null) return null;
  const extent = (axes: readonly number[]) => axes.reduce((p, d) => p * (shape[d] as number), 1);
  let transposed = false;
  let ld: number;
  if (second === "any" || second === 1) ld = first === "any" ? Math.max(1, extent(secondAxes)) : first;
  else if (allowTransposed && (first === "any" || first === 1)) {
    transposed = true;
    ld = second;
  } else return null;
  if (ld < extent(transposed ? firstAxes : secondAxes)) return null;
  const sizes = batchAxes.map((d) => shape[d] as number);
  const count = sizes.reduce((p, s) => p * s, 1);
  const offsets = new Int32Array(count);
  for (let bi = 0; bi < count; bi++) {
    let rest = bi;
    let at = 0;
    for (let j = batchAxes.length - 1; j >= 0; j--) {
      const size = sizes[j] as number;
      at += (rest % size) * (strides[batchAxes[j] as number] as number);
      rest = Math.floor(rest / size);
    }
    offsets[bi] = at;
  }
  return { offsets, ld, transposed };
}

/**
 * The layout most gathers and scatters have (embedding lookups, segment sums, `.at[i].add`):
 * index vectors along the last axis of the index array (or one number per element), no batching
 * dimensions, the window's axes last in the gathered result / the updates, and the window one
 * contiguous run of the operand. Then the k-th index vector starts at k * vectorLength and owns
 * the k-th window-sized run of the result or updates, so one flat loop over index vectors does
 * the work the general odometer walk (index-batches.ts) does with closures per position.
 */
import type { TypedArray } from "../../array.ts";

/** Index storage read as plain numbers (integers up to 32 bits); null for i64 and the others. */
export function plainIndices(data: TypedArray): ArrayLike<number> | null {
  if (
    data instanceof Int32Array ||
    data instanceof Uint32Array ||
    data instanceof Int16Array ||
    data instanceof Uint16Array ||
    data instanceof Int8Array ||
    data instanceof Uint8Array
  )
    return data;
  return null;
}

/** Whether index vectors lie along the last axis (or are single numbers): vector k starts at k * length. */
export function vectorsAreRows(indicesRank: number, indexVectorDim: number): boolean {
  return indexVectorDim >= indicesRank - 1;
}

/** Whether `axes` are the last `axes.length` of `rank` axes, in order. */
export function areTrailingAxes(axes: readonly number[], rank: number): boolean {
  const first = rank - axes.length;
  for (let j = 0; j < axes.length; j++) if (axes[j] !== first + j) return false;
  return true;
}

/**
 * Whether a window of `shape` whose axes step by `steps` in storage is one contiguous run of
 * `unit`-sized elements (axes of extent 1 step anywhere).
 */
export function isContiguousWindow(shape: readonly number[], steps: readonly number[], unit: number): boolean {
  let expected = unit;
  for (let j = shape.length - 1; j >= 0; j--) {
    const size = shape[j] as number;
    if (size === 1) continue;
    if (steps[j] !== expected) return false;
    expected *= size;
  }
  return true;
}

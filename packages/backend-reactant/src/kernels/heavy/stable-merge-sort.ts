/**
 * A bottom-up merge sort of an index permutation. It only ever asks "does b sort strictly
 * before a?", so it is stable and needs nothing of the comparator beyond that question, which
 * keeps the region path and the fast path on the same algorithm (same answers even for
 * comparators that are not strict weak orders, such as a plain LT with NaNs).
 */
export function stableSortIndices(count: number, before: (b: number, a: number) => boolean): Int32Array {
  let from = new Int32Array(count);
  for (let i = 0; i < count; i++) from[i] = i;
  let to = new Int32Array(count);
  for (let width = 1; width < count; width *= 2) {
    for (let lo = 0; lo < count; lo += 2 * width) {
      const mid = Math.min(lo + width, count);
      const hi = Math.min(lo + 2 * width, count);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // Take from the right run only when it is strictly first: ties keep input order.
        if (before(from[j] as number, from[i] as number)) to[k++] = from[j++] as number;
        else to[k++] = from[i++] as number;
      }
      while (i < mid) to[k++] = from[i++] as number;
      while (j < hi) to[k++] = from[j++] as number;
    }
    [from, to] = [to, from];
  }
  return from;
}

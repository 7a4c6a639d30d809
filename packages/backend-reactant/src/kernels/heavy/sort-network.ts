/**
 * Sorting with a general comparator region in O(log^2 n) batched region calls instead of
 * O(n log n) scalar ones: a bitonic network over an index permutation, every line of the
 * array at once. Each network stage asks the comparator, for all its pairs together, both
 * less(x, y) and less(y, x); ties are broken by original position, which makes the order
 * total, so for any comparator that is a strict weak order the result is exactly the stable
 * sort's. Lines are padded to a power of two with slots that sort after everything.
 */
import { type NDArray, type RegionInfo, alloc, elementCount } from "../../array.ts";
import { copier } from "./reduce-window-batched.ts";

/** Per line, the sorted order of positions 0..length-1 (element offsets come from `offsetOf`). */
export function networkSortOrders(
  inputs: readonly NDArray[],
  comparator: RegionInfo,
  lines: number,
  length: number,
  offsetOf: (line: number, position: number) => number,
): Int32Array {
  let size = 1;
  while (size < length) size *= 2;
  const perm = new Int32Array(lines * size);
  for (let l = 0; l < lines; l++) for (let i = 0; i < size; i++) perm[l * size + i] = i;
  const pairsPerLine = size / 2;
  const firsts = new Int32Array(lines * pairsPerLine);
  const ascending = new Uint8Array(lines * pairsPerLine);
  for (let k = 2; k <= size; k *= 2) {
    for (let j = k / 2; j > 0; j /= 2) {
      // The pairs (i, i ^ j) of this stage, for every line.
      let p = 0;
      for (let l = 0; l < lines; l++) {
        for (let i = 0; i < size; i++) {
          const partner = i ^ j;
          if (partner <= i) continue;
          firsts[p] = l * size + i;
          ascending[p] = (i & k) === 0 ? 1 : 0;
          p++;
        }
      }
      // x = the element that would move forward, y = the one it must beat.
      const xs = new Int32Array(p);
      const ys = new Int32Array(p);
      for (let q = 0; q < p; q++) {
        const at = firsts[q] as number;
        const a = perm[at] as number;
        const b = perm[at + j] as number;
        xs[q] = ascending[q] ? b : a;
        ys[q] = ascending[q] ? a : b;
      }
      const lineOf = (q: number) => Math.floor((firsts[q] as number) / size);
      const xFirst = compareAll(inputs, comparator, xs, ys, lineOf, length, offsetOf);
      const yFirst = compareAll(inputs, comparator, ys, xs, lineOf, length, offsetOf);
      for (let q = 0; q < p; q++) {
        const x = xs[q] as number;
        const y = ys[q] as number;
        let swap: boolean;
        if (x >= length) swap = false;
        else if (y >= length) swap = true;
        else swap = (xFirst[q] as number) === 1 || ((yFirst[q] as number) === 0 && x < y);
        if (swap) {
          const at = firsts[q] as number;
          const t = perm[at] as number;
          perm[at] = perm[at + j] as number;
          perm[at + j] = t;
        }
      }
    }
  }
  const orders = new Int32Array(lines * length);
  for (let l = 0; l < lines; l++) orders.set(perm.subarray(l * size, l * size + length), l * length);
  return orders;
}

/** less(x[q], y[q]) for every pair in one batched call; padding slots read as position 0. */
function compareAll(
  inputs: readonly NDArray[],
  comparator: RegionInfo,
  xs: Int32Array,
  ys: Int32Array,
  lineOf: (q: number) => number,
  length: number,
  offsetOf: (line: number, position: number) => number,
): Uint8Array {
  const count = xs.length;
  const args: NDArray[] = [];
  for (const input of inputs) {
    for (const side of [xs, ys]) {
      const values = alloc(input.type, [count]);
      const copy = copier(input, values);
      for (let q = 0; q < count; q++) {
        const position = side[q] as number;
        copy(offsetOf(lineOf(q), position < length ? position : 0), q);
      }
      args.push(values);
    }
  }
  const answer = comparator.batched(args)[0] as NDArray;
  const out = new Uint8Array(count);
  const single = elementCount(answer.shape) === 1;
  for (let q = 0; q < count; q++) out[q] = Number(answer.data[single ? 0 : q]) !== 0 ? 1 : 0;
  return out;
}

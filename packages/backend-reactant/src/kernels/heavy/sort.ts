/**
 * stablehlo.sort: sorts several same-shaped operands together along one dimension. The
 * comparator region sees (lhs0, rhs0, lhs1, rhs1, ...) and answers "lhs sorts first". The
 * sort is always stable (a stable result is also a valid unstable one). When the engine knows
 * the comparator is a plain LT / GT on one operand it passes `fastKey` and the region is not
 * called at all; otherwise large sorts use the batched network (sort-network.ts) and small
 * ones a merge sort calling the region per comparison.
 */
import { type NDArray, type RegionInfo, type Scalar, slotsPerElement, strides } from "../../array.ts";
import { type ScalarReader, scalarReader } from "./element-io.ts";
import { invalid } from "./errors.ts";
import { bitExact, sameKind } from "./permute.ts";
import { type SortKeys, sortKeys } from "./sort-keys.ts";
import { networkSortOrders } from "./sort-network.ts";
import { stableSortIndices } from "./stable-merge-sort.ts";

export interface SortFastKey {
  /** Which operand the comparator looks at. */
  readonly operand: number;
  /** GT comparator (largest first) instead of LT. */
  readonly descending: boolean;
  /** Compare floats by IEEE totalOrder (compare_type TOTALORDER); false: plain < / >. */
  readonly totalOrder: boolean;
}

export interface SortOptions {
  readonly isStable?: boolean;
  readonly fastKey?: SortFastKey;
  /** The key values fastKey orders by, where they are not the operand itself (a mapped key). */
  readonly keys?: NDArray;
}

const OP = "sort";
/**
 * From this many elements a general comparator runs through the batched sorting network
 * (O(log^2 n) region calls) instead of the merge sort's O(n log n) scalar calls.
 */
const NETWORK_MIN_ELEMENTS = 64;

/** sort(inputs, dimension, comparator, options): the inputs permuted alike along `dimension`. */
export function sort(
  inputs: readonly NDArray[],
  dimension: number,
  comparator: RegionInfo,
  options: SortOptions = {},
): NDArray[] {
  if (inputs.length === 0) throw invalid(OP, "needs at least one operand");
  const shape = (inputs[0] as NDArray).shape;
  for (const input of inputs)
    if (input.shape.join() !== shape.join()) throw invalid(OP, "all operands must have the same shape");
  const rank = shape.length;
  const axis = dimension < 0 ? dimension + rank : dimension;
  if (!Number.isInteger(axis) || axis < 0 || axis >= Math.max(rank, 1))
    throw invalid(OP, `dimension ${dimension} is outside rank ${rank}`);
  const results: NDArray[] = inputs.map((input) => ({
    type: input.type,
    shape: [...shape],
    data: sameKind(input.data, input.data.length),
  }));
  if (rank === 0) {
    inputs.forEach((input, k) => {
      (results[k] as NDArray).data.set(input.data as never);
    });
    return results;
  }
  const length = shape[axis] as number;
  const stride = strides(shape)[axis] as number;
  const total = shape.reduce((p, d) => p * d, 1);
  if (total === 0) return results;
  const lines = total / length;
  const before = options.fastKey
    ? keyOrder(options.keys ?? inputs[options.fastKey.operand], options.fastKey)
    : regionOrder(inputs, comparator);
  const moves = inputs.map((input, k) => ({
    from: bitExact(input.data, slotsPerElement(input.type)),
    to: bitExact((results[k] as NDArray).data, 1).view,
  }));
  // Lines are indexed by (outer, inner) around the sorted axis.
  const lineBase = (line: number) => Math.floor(line / stride) * length * stride + (line % stride);
  const useNetwork = !options.fastKey && total >= NETWORK_MIN_ELEMENTS && length > 1;
  const networkOrders = useNetwork
    ? networkSortOrders(inputs, comparator, lines, length, (line, position) => lineBase(line) + position * stride)
    : null;
  const packed = options.fastKey
    ? packedKeys(options.keys ?? inputs[options.fastKey.operand], options.fastKey, length)
    : null;
  const scratch = packed ? new Float64Array(length) : null;
  const packedOrder = new Int32Array(packed ? length : 0);
  for (let line = 0; line < lines; line++) {
    const base = lineBase(line);
    let order: Int32Array;
    if (networkOrders) order = networkOrders.subarray(line * length, (line + 1) * length);
    else if (packed && scratch) {
      // (key, position) packed into one exactly representable number: a native numeric sort
      // gives the stable order, ties broken by position.
      for (let i = 0; i < length; i++) scratch[i] = (packed[base + i * stride] as number) * POSITIONS + i;
      scratch.sort();
      for (let i = 0; i < length; i++) packedOrder[i] = (scratch[i] as number) % POSITIONS;
      order = packedOrder;
    } else order = stableSortIndices(length, (b, a) => before(base + b * stride, base + a * stride));
    for (const move of moves) {
      const q = move.from.slots;
      const src = move.from.view as unknown as { [i: number]: unknown };
      const dst = move.to as unknown as { [i: number]: unknown };
      for (let i = 0; i < length; i++) {
        const from = (base + (order[i] as number) * stride) * q;
        const to = (base + i * stride) * q;
        for (let s = 0; s < q; s++) dst[to + s] = src[from + s];
      }
    }
  }
  return results;
}

/** Positions per line a packed key leaves room for; keys take the 33 bits above. */
const POSITIONS = 2 ** 20;

/**
 * Keys as non-negative integers below 2^33 whose ascending order is the sort's order, where the
 * order is total (TOTALORDER floats, integers up to 32 bits): null otherwise (the merge sort then
 * asks the same question as the region, NaNs included).
 */
function packedKeys(keyed: NDArray | undefined, fastKey: SortFastKey, length: number): Float64Array | null {
  if (!keyed || length > POSITIONS) return null;
  const t = keyed.type;
  const float = t === "f32" || t === "f16" || t === "bf16";
  const int = /^u?i(1|8|16|32)$/.test(t);
  if (!(float && fastKey.totalOrder) && !int) return null;
  const { primary } = sortKeys(keyed, fastKey.totalOrder);
  // Every such key lies in [-2^31, 2^32): shifted by 2^31 it fits 33 bits.
  const top = 2 ** 33 - 1;
  const out = new Float64Array(primary.length);
  for (let i = 0; i < primary.length; i++) {
    const u = (primary[i] as number) + 2 ** 31;
    out[i] = fastKey.descending ? top - u : u;
  }
  return out;
}

function keyOrder(keyed: NDArray | undefined, fastKey: SortFastKey): (b: number, a: number) => boolean {
  if (!keyed) throw invalid(OP, `fast key operand ${fastKey.operand} does not exist`);
  const { primary, secondary }: SortKeys = sortKeys(keyed, fastKey.totalOrder);
  const descending = fastKey.descending;
  // Compare with < and >, never by subtraction: Inf - Inf is NaN.
  return (b, a) => {
    const pb = primary[b] as number;
    const pa = primary[a] as number;
    if (pb !== pa || !secondary) return descending ? pb > pa : pb < pa;
    const sb = secondary[b] as number;
    const sa = secondary[a] as number;
    return descending ? sb > sa : sb < sa;
  };
}

function regionOrder(inputs: readonly NDArray[], comparator: RegionInfo): (b: number, a: number) => boolean {
  const readers: ScalarReader[] = inputs.map(scalarReader);
  const n = inputs.length;
  return (b, a) => {
    const args = new Array<Scalar>(2 * n);
    for (let k = 0; k < n; k++) {
      const read = readers[k] as ScalarReader;
      args[2 * k] = read(b);
      args[2 * k + 1] = read(a);
    }
    return Number(comparator.fn(args)[0]) !== 0;
  };
}

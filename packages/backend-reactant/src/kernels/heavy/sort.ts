/**
 * stablehlo.sort: sorts several same-shaped operands together along one dimension. The
 * comparator region sees (lhs0, rhs0, lhs1, rhs1, ...) and answers "lhs sorts first". The
 * sort is always stable (a stable result is also a valid unstable one). When the engine knows
 * the comparator is a plain LT / GT on one operand it passes `fastKey` and the region is not
 * called at all; otherwise large sorts use the batched network (sort-network.ts) and small
 * ones a merge sort calling the region per comparison.
 */
import {
  type ElemType,
  type NDArray,
  type RegionInfo,
  type Scalar,
  type TypedArray,
  slotsPerElement,
  strides,
} from "../../array.ts";
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
  /**
   * Only the first `prefix` positions of each line are read (the plan saw only slices of them):
   * with a fast key they are selected in order, the rest of each line left unspecified.
   */
  readonly prefix?: number;
  /** Storage for the results (the plan's pool; contents arbitrary): fresh zeroed arrays otherwise. */
  readonly alloc?: (type: ElemType, count: number) => TypedArray;
}

const OP = "sort";
/**
 * From this many elements a general comparator runs through the batched sorting network
 * (O(log^2 n) region calls) instead of the merge sort's O(n log n) scalar calls.
 */
const NETWORK_MIN_ELEMENTS = 64;
/** Up to this many selected positions are kept as a sorted run (insertion); more in a heap. */
const INSERTION_MAX = 32;

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
    data: options.alloc
      ? options.alloc(input.type, input.data.length / slotsPerElement(input.type))
      : sameKind(input.data, input.data.length),
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
  // Selecting the first K pays off while K is a small part of the line; only those K positions
  // of each result line are then written.
  const selectCount = options.prefix !== undefined && options.prefix * 8 <= length ? options.prefix : length;
  const keyed = options.fastKey ? (options.keys ?? inputs[options.fastKey.operand]) : undefined;
  // Selecting on f32 keys reads their bits line by line, without a key array for the whole operand.
  const f32Bits =
    options.fastKey?.totalOrder && keyed?.type === "f32" && selectCount < length
      ? new Int32Array(keyed.data.buffer, keyed.data.byteOffset, keyed.data.length)
      : null;
  const packed = options.fastKey && !f32Bits ? radixKeys(keyed, options.fastKey) : null;
  const signedPacked = packed ? new Int32Array(packed.buffer, packed.byteOffset, packed.length) : null;
  const flip = options.fastKey?.descending ? -1 : 0;
  // The comparison the merge sort asks, where the radix keys do not apply.
  const before =
    packed || f32Bits
      ? null
      : options.fastKey
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
  const radix = packed || f32Bits ? takeScratch(length) : null;
  for (let line = 0; line < lines; line++) {
    const base = lineBase(line);
    let order: Int32Array;
    if (networkOrders) order = networkOrders.subarray(line * length, (line + 1) * length);
    else if (radix && f32Bits) {
      // totalOrder as a signed integer: negative patterns have their magnitude bits inverted.
      const keys = radix.line;
      for (let i = 0, at = base; i < length; i++, at += stride) {
        const b = f32Bits[at] as number;
        keys[i] = b ^ ((b >> 31) & 0x7fffffff) ^ flip;
      }
      order = radix.smallest(selectCount);
    } else if (packed && signedPacked && radix) {
      if (selectCount < length) {
        const keys = radix.line;
        for (let i = 0, at = base; i < length; i++, at += stride) keys[i] = (signedPacked[at] as number) ^ 0x80000000;
        order = radix.smallest(selectCount);
      } else {
        for (let i = 0; i < length; i++) radix.keys[i] = packed[base + i * stride] as number;
        order = radix.sort();
      }
    } else {
      const ask = before as (b: number, a: number) => boolean;
      order = stableSortIndices(length, (b, a) => ask(base + b * stride, base + a * stride));
    }
    for (const move of moves) {
      const q = move.from.slots;
      if (q === 1 && stride === 1) gatherRun(move.from.view, move.to, base, order, selectCount);
      else {
        const src = move.from.view as unknown as { [i: number]: unknown };
        const dst = move.to as unknown as { [i: number]: unknown };
        for (let i = 0; i < selectCount; i++) {
          const from = (base + (order[i] as number) * stride) * q;
          const to = (base + i * stride) * q;
          for (let s = 0; s < q; s++) dst[to + s] = src[from + s];
        }
      }
    }
  }
  if (radix) putScratch(radix);
  return results;
}

/**
 * Scratch of earlier sorts by line length, taken while a sort uses it: a program sorts lines of
 * the same few lengths on every run, and making six arrays costs more than selecting the top 8
 * of 256. A few lengths are kept, the oldest dropped first.
 */
const spareScratch = new Map<number, RadixScratch>();
const SPARE_LENGTHS = 8;

function takeScratch(length: number): RadixScratch {
  const spare = spareScratch.get(length);
  if (spare === undefined) return new RadixScratch(length);
  spareScratch.delete(length);
  return spare;
}

function putScratch(scratch: RadixScratch): void {
  if (spareScratch.size >= SPARE_LENGTHS) spareScratch.delete(spareScratch.keys().next().value as number);
  spareScratch.set(scratch.length, scratch);
}

/** dst[base + i] = src[base + order[i]]: one contiguous line of one-slot elements. */
function gatherRun(src: TypedArray, dst: TypedArray, base: number, order: Int32Array, length: number): void {
  const from = src as Int32Array;
  const to = dst as Int32Array;
  for (let i = 0; i < length; i++) to[base + i] = from[base + (order[i] as number)] as number;
}

/**
 * Keys as unsigned 32-bit integers whose ascending order is the sort's order, where that order is
 * total (TOTALORDER floats, integers up to 32 bits): null otherwise (the merge sort then asks the
 * same question as the region, NaNs included).
 */
function radixKeys(keyed: NDArray | undefined, fastKey: SortFastKey): Uint32Array | null {
  if (!keyed) return null;
  const t = keyed.type;
  const float = t === "f32" || t === "f16" || t === "bf16";
  const signed = /^i(8|16|32)$/.test(t);
  if (!(float && fastKey.totalOrder) && !signed && !/^(i1|ui8|ui16|ui32)$/.test(t)) return null;
  if (t === "f32") {
    // totalOrder on the bits (sort-keys.ts's totalOrderKey) without a branch on the sign, which
    // random data mispredicts half the time: negative patterns invert, others flip the sign bit.
    const data = keyed.data;
    const bits = new Int32Array(data.buffer, data.byteOffset, data.length);
    const out = new Uint32Array(bits.length);
    const flip = fastKey.descending ? -1 : 0;
    for (let i = 0; i < bits.length; i++) {
      const b = bits[i] as number;
      out[i] = b ^ ((b >> 31) | 0x80000000) ^ flip;
    }
    return out;
  }
  const { primary } = sortKeys(keyed, fastKey.totalOrder);
  const out = new Uint32Array(primary.length);
  const shift = signed ? 2 ** 31 : 0;
  for (let i = 0; i < primary.length; i++) {
    const u = (primary[i] as number) + shift;
    out[i] = fastKey.descending ? 0xffffffff - u : u;
  }
  return out;
}

/**
 * A stable LSD radix sort of one line's u32 keys, a byte per pass (passes where every key has
 * the same byte are skipped): the order of positions, ties in position order.
 */
class RadixScratch {
  readonly keys: Uint32Array;
  private readonly otherKeys: Uint32Array;
  private readonly order: Int32Array;
  private readonly otherOrder: Int32Array;
  private readonly counts = new Int32Array(256);
  private readonly signedKeys: Int32Array;
  /** One line's keys as signed integers, for `smallest`. */
  readonly line: Int32Array;

  constructor(readonly length: number) {
    this.keys = new Uint32Array(length);
    this.otherKeys = new Uint32Array(length);
    this.order = new Int32Array(length);
    this.otherOrder = new Int32Array(length);
    this.signedKeys = new Int32Array(this.otherKeys.buffer);
    this.line = new Int32Array(length);
  }

  sort(): Int32Array {
    const n = this.length;
    let keys = this.keys;
    let order = this.order;
    let nextKeys = this.otherKeys;
    let nextOrder = this.otherOrder;
    for (let i = 0; i < n; i++) order[i] = i;
    const counts = this.counts;
    for (let shift = 0; shift < 32; shift += 8) {
      counts.fill(0);
      for (let i = 0; i < n; i++) {
        const b = ((keys[i] as number) >>> shift) & 255;
        counts[b] = (counts[b] as number) + 1;
      }
      if (counts[((keys[0] as number) >>> shift) & 255] === n) continue;
      let sum = 0;
      for (let b = 0; b < 256; b++) {
        const c = counts[b] as number;
        counts[b] = sum;
        sum += c;
      }
      for (let i = 0; i < n; i++) {
        const k = keys[i] as number;
        const b = (k >>> shift) & 255;
        const at = counts[b] as number;
        counts[b] = at + 1;
        nextKeys[at] = k;
        nextOrder[at] = order[i] as number;
      }
      [keys, nextKeys] = [nextKeys, keys];
      [order, nextOrder] = [nextOrder, order];
    }
    return order;
  }

  /**
   * The positions of the `count` smallest (key, position) pairs of `line` (signed keys), in
   * order, in the first `count` entries of the result (the rest unspecified). A later position
   * with a key equal to one kept never displaces it, so ties keep position order as the stable
   * sort does. Few kept: a sorted run, entered by insertion; more: a max-heap.
   */
  smallest(count: number): Int32Array {
    const keys = this.line;
    const n = this.length;
    const bestKeys = this.signedKeys;
    const order = this.order;
    if (count <= INSERTION_MAX) {
      let size = 0;
      let worst = 0;
      for (let at = 0; at < n; at++) {
        const k = keys[at] as number;
        if (size === count) {
          if (k >= worst) continue;
          size--;
        }
        let j = size;
        for (; j > 0 && (bestKeys[j - 1] as number) > k; j--) {
          bestKeys[j] = bestKeys[j - 1] as number;
          order[j] = order[j - 1] as number;
        }
        bestKeys[j] = k;
        order[j] = at;
        size++;
        worst = bestKeys[size - 1] as number;
      }
      return order;
    }
    const heapPos = this.otherOrder;
    const larger = (a: number, b: number) =>
      (bestKeys[a] as number) > (bestKeys[b] as number) ||
      (bestKeys[a] === bestKeys[b] && (heapPos[a] as number) > (heapPos[b] as number));
    const swap = (a: number, b: number) => {
      const k = bestKeys[a] as number;
      bestKeys[a] = bestKeys[b] as number;
      bestKeys[b] = k;
      const p = heapPos[a] as number;
      heapPos[a] = heapPos[b] as number;
      heapPos[b] = p;
    };
    const siftDown = (size: number) => {
      let at = 0;
      for (;;) {
        const l = 2 * at + 1;
        const r = l + 1;
        let big = at;
        if (l < size && larger(l, big)) big = l;
        if (r < size && larger(r, big)) big = r;
        if (big === at) return;
        swap(at, big);
        at = big;
      }
    };
    for (let i = 0; i < count; i++) {
      bestKeys[i] = keys[i] as number;
      heapPos[i] = i;
      for (let at = i; at > 0; ) {
        const up = (at - 1) >> 1;
        if (!larger(at, up)) break;
        swap(at, up);
        at = up;
      }
    }
    // Most positions lose to the heap's top: that test alone runs in a tight loop.
    let top = bestKeys[0] as number;
    for (let at = count; at < n; at++) {
      const k = keys[at] as number;
      if (k >= top) continue;
      bestKeys[0] = k;
      heapPos[0] = at;
      siftDown(count);
      top = bestKeys[0] as number;
    }
    // Heap order to sorted order: pop the largest to the back.
    for (let size = count; size > 0; size--) {
      order[size - 1] = heapPos[0] as number;
      swap(0, size - 1);
      siftDown(size - 1);
    }
    return order;
  }
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

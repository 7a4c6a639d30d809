import { type ElemType, type TypedArray, allocData } from "../array.ts";

/** Pooled bytes are kept up to the largest live total seen, and at least this much. */
const MIN_POOL_BYTES = 64 << 20;

/**
 * The engine's memory accounting: bytes of live buffers, counted once per storage however many
 * arrays (reshape views), slots or device buffers hold it. Peak is the high-water mark since
 * the last reset, which is what the worker's memory probe reads.
 *
 * With `pool`, arrays that kernels got from `takeData` are recycled: a fresh ArrayBuffer of a
 * few MB costs a zero fill and a page fault per 4 KB on first touch, which for a CNN is a large
 * share of a layer's time, while every run of a plan frees and needs the same sizes again.
 * Small arrays are pooled too: for a program of tiny tensors, making a typed array whose
 * `buffer` can be read (which `retain` does) costs more than the kernel that fills it. Storage
 * whose count drops to zero is only *pending* until the entry block finishes a step (`flush`):
 * inside a step a kernel may still hold arrays a region call returned or a nested function
 * handed over uncounted, and those must not be handed out again. Pooled storage is not counted
 * as in use.
 */
export class Arena {
  /**
   * Every storage seen, by each array object that views it and by its ArrayBuffer. Counting
   * through the array object skips reading `buffer` (costly on a small typed array until it
   * has one) and, as entries stay while their objects live, a count dropping to zero deletes
   * nothing: the churn of a Map of live buffers cost more than the kernels of a small program.
   */
  private readonly storage = new WeakMap<object, Storage>();
  private inUse = 0;
  private peak = 0;
  private highWater = 0;
  private readonly pooling: boolean;
  private pending: Storage[] = [];
  /** Free arrays by pool key (array class and length, see poolKey). */
  private readonly free = new Map<number, Storage[]>();
  private freeBytes = 0;
  /** Nesting of runBlock calls; steps of the outermost block are the safe points. */
  depth = 0;

  constructor(options: { pool?: boolean } = {}) {
    this.pooling = options.pool === true;
  }

  retain(data: TypedArray): void {
    const s = this.storage.get(data) ?? this.register(data);
    if (s.refs++ > 0) return;
    if (s.free) this.unpool(s);
    this.inUse += s.bytes;
    if (this.inUse > this.peak) this.peak = this.inUse;
    if (this.inUse > this.highWater) this.highWater = this.inUse;
  }

  release(data: TypedArray): void {
    const s = this.storage.get(data);
    if (s === undefined || s.refs === 0) return;
    if (--s.refs > 0) return;
    this.inUse -= s.bytes;
    if (s.array !== null) this.pending.push(s);
  }

  /**
   * Whether one holder alone counts this storage and the arena made it: then a step that the plan
   * says is the holder's last reader may write into it (plan/ownership.ts). Storage from outside
   * (plan constants, a caller's arrays) is never written.
   */
  soleOwner(data: TypedArray): boolean {
    const s = this.storage.get(data);
    const sole = s !== undefined && s.refs === 1 && s.array !== null && !s.free;
    // The caller writes into it now: what was derived from its old contents is stale.
    if (sole) (s as Storage).version++;
    return sole;
  }

  /**
   * A number that changes whenever this storage's contents may have: when the pool hands it out
   * again and when a step writes into it in place (soleOwner). Storage the arena did not make
   * (weights uploaded whole, plan constants, arrays kernels made for themselves) never changes:
   * 0. Kernels may keep what they derive from an array (a quantized layer's weights as floats)
   * while the array and its version are the same.
   */
  version(data: TypedArray): number {
    // A view not counted yet (a region's row of a pooled array) is known by its buffer.
    const s = this.storage.get(data) ?? this.storage.get(data.buffer);
    return s === undefined || s.array === null ? 0 : s.version;
  }

  /** The first sight of an array object: joins the entry of its buffer, or starts one. */
  private register(data: TypedArray): Storage {
    const buffer = data.buffer;
    let s = this.storage.get(buffer);
    if (s === undefined) {
      s = { refs: 0, bytes: buffer.byteLength, array: null, key: 0, free: false, version: 0 };
      this.storage.set(buffer, s);
    }
    this.storage.set(data, s);
    return s;
  }

  /**
   * An array of `kind` with `length` slots, recycled when one is free; contents are arbitrary.
   * Made fresh (and remembered for the pool) otherwise.
   */
  takeArray(kind: ArrayKind, length: number): TypedArray {
    if (!this.pooling || length === 0) return new kind.ctor(length);
    const key = poolKey(kind, length);
    const recycled = this.free.get(key)?.pop();
    if (recycled) {
      recycled.free = false;
      recycled.version++;
      this.freeBytes -= recycled.bytes;
      return recycled.array as TypedArray;
    }
    const array = new kind.ctor(length);
    const buffer = array.buffer;
    const s: Storage = { refs: 0, bytes: buffer.byteLength, array, key, free: false, version: 1 };
    this.storage.set(buffer, s);
    this.storage.set(array, s);
    return array;
  }

  /** Moves pending storage that is still unreferenced into the pool (see the class comment). */
  flush(): void {
    if (this.pending.length === 0) return;
    const limit = Math.max(MIN_POOL_BYTES, this.highWater);
    for (const s of this.pending) {
      // Counted again since (a value handed over uncounted), or pending twice: skipped.
      if (s.refs > 0 || s.free || this.freeBytes + s.bytes > limit) continue;
      let list = this.free.get(s.key);
      if (!list) {
        list = [];
        this.free.set(s.key, list);
      }
      list.push(s);
      s.free = true;
      this.freeBytes += s.bytes;
    }
    this.pending = [];
  }

  /** A pooled array counted again (a kernel kept it): it must not be handed out. */
  private unpool(s: Storage): void {
    const list = this.free.get(s.key);
    const at = list ? list.indexOf(s) : -1;
    if (list && at >= 0) list.splice(at, 1);
    s.free = false;
    this.freeBytes -= s.bytes;
  }

  /** Drops the pooled buffers (backend dispose). */
  clearPool(): void {
    for (const list of this.free.values()) for (const s of list) s.free = false;
    this.free.clear();
    this.freeBytes = 0;
    this.pending = [];
  }

  get inUseBytes(): number {
    return this.inUse;
  }

  get peakBytes(): number {
    return this.peak;
  }

  get pooledBytes(): number {
    return this.freeBytes;
  }

  resetPeak(): void {
    this.peak = this.inUse;
  }
}

/** One storage's count, and for arrays takeArray made, what the pool needs. */
interface Storage {
  refs: number;
  readonly bytes: number;
  /** The array the pool hands out again; null for storage the arena did not make. */
  readonly array: TypedArray | null;
  readonly key: number;
  /** In a free list now. */
  free: boolean;
  /** Bumped when the contents may change (see Arena.version); 0 for storage the arena did not make. */
  version: number;
}

/** A typed-array class as the pool sees it. */
export interface ArrayKind {
  readonly ctor: new (length: number) => TypedArray;
  /** Distinguishes the classes in pool keys. */
  readonly tag: number;
}

/** Arrays of one class and length share a key. */
function poolKey(kind: ArrayKind, length: number): number {
  return length * 16 + kind.tag;
}

/** Per element type: its storage class and slots per element (2 for complex). */
const KINDS = new Map<ElemType, { readonly kind: ArrayKind; readonly slots: number }>();
const TAGS = new Map<unknown, number>();

function kindOf(type: ElemType): { readonly kind: ArrayKind; readonly slots: number } {
  let info = KINDS.get(type);
  if (!info) {
    const sample = allocData(type, 1);
    const ctor = sample.constructor as ArrayKind["ctor"];
    let tag = TAGS.get(ctor);
    if (tag === undefined) {
      tag = TAGS.size;
      TAGS.set(ctor, tag);
    }
    info = { kind: { ctor, tag }, slots: sample.length };
    KINDS.set(type, info);
  }
  return info;
}

/** An uninitialised array for `count` elements of `type` from the arena's pool. */
export function takeData(arena: Arena, type: ElemType, count: number): TypedArray {
  const { kind, slots } = kindOf(type);
  return arena.takeArray(kind, count * slots);
}

/**
 * The same as `takeData` for one element type fixed at plan time: kernels whose output type
 * is known when they are built skip the per-call type lookup.
 */
export function dataTaker(type: ElemType): (arena: Arena, count: number) => TypedArray {
  const { kind, slots } = kindOf(type);
  return (arena, count) => arena.takeArray(kind, count * slots);
}

/**
 * dataTaker for a type seen at run time, remembered for the next call: an op's output type
 * rarely changes between runs, and comparing the type string is cheaper than looking it up.
 */
export function lastTypeTaker(): (type: ElemType) => (arena: Arena, count: number) => TypedArray {
  let lastType: ElemType | null = null;
  let taker: ((arena: Arena, count: number) => TypedArray) | null = null;
  return (type) => {
    if (type !== lastType || taker === null) {
      taker = dataTaker(type);
      lastType = type;
    }
    return taker;
  };
}

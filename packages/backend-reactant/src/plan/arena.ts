import { type ElemType, type TypedArray, allocData } from "../array.ts";

/** Pooled bytes are kept up to the largest live total seen, and at least this much. */
const MIN_POOL_BYTES = 64 << 20;
/** Buffers smaller than this are cheap to allocate and not worth tracking. */
const MIN_POOLED_BUFFER = 4096;

/**
 * The engine's memory accounting: bytes of live buffers, counted once per storage however many
 * arrays (reshape views), slots or device buffers hold it. Peak is the high-water mark since
 * the last reset, which is what the worker's memory probe reads.
 *
 * With `pool`, buffers that kernels got from `take` are recycled: a fresh ArrayBuffer of a few
 * MB costs a zero fill and a page fault per 4 KB on first touch, which for a CNN is a large
 * share of a layer's time, while every run of a plan frees and needs the same sizes again. A
 * buffer whose count drops to zero is only *pending* until the entry block finishes a step
 * (`flush`): inside a step a kernel may still hold arrays a region call returned or a nested
 * function handed over uncounted, and those must not be handed out again. Pooled buffers are
 * not counted as in use.
 */
export class Arena {
  private readonly refs = new Map<ArrayBufferLike, number>();
  private inUse = 0;
  private peak = 0;
  private highWater = 0;
  private readonly pooling: boolean;
  /** Buffers `take` made: the only ones ever recycled. */
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private pending: ArrayBufferLike[] = [];
  private readonly free = new Map<number, ArrayBufferLike[]>();
  private freeBytes = 0;
  /** Nesting of runBlock calls; steps of the outermost block are the safe points. */
  depth = 0;

  constructor(options: { pool?: boolean } = {}) {
    this.pooling = options.pool === true;
  }

  retain(data: TypedArray): void {
    const key = data.buffer;
    const count = this.refs.get(key);
    if (count === undefined) {
      this.refs.set(key, 1);
      this.inUse += key.byteLength;
      if (this.inUse > this.peak) this.peak = this.inUse;
      if (this.inUse > this.highWater) this.highWater = this.inUse;
    } else this.refs.set(key, count + 1);
  }

  release(data: TypedArray): void {
    const key = data.buffer;
    const count = this.refs.get(key);
    if (count === undefined) return;
    if (count <= 1) {
      this.refs.delete(key);
      this.inUse -= key.byteLength;
      if (this.pooling && this.owned.has(key)) this.pending.push(key);
    } else this.refs.set(key, count - 1);
  }

  /** A buffer of exactly `byteLength` bytes, recycled when one is free. Contents are arbitrary. */
  take(byteLength: number): ArrayBufferLike {
    if (!this.pooling || byteLength < MIN_POOLED_BUFFER) return new ArrayBuffer(byteLength);
    const list = this.free.get(byteLength);
    const recycled = list?.pop();
    if (recycled) {
      this.freeBytes -= byteLength;
      return recycled;
    }
    const fresh = new ArrayBuffer(byteLength);
    this.owned.add(fresh);
    return fresh;
  }

  /** Moves pending buffers that are still unreferenced into the pool (see the class comment). */
  flush(): void {
    if (this.pending.length === 0) return;
    const limit = Math.max(MIN_POOL_BYTES, this.highWater);
    for (const key of this.pending) {
      if (this.refs.has(key)) continue;
      if (this.freeBytes + key.byteLength > limit) continue;
      let list = this.free.get(key.byteLength);
      if (!list) {
        list = [];
        this.free.set(key.byteLength, list);
      }
      if (list.includes(key)) continue;
      list.push(key);
      this.freeBytes += key.byteLength;
    }
    this.pending = [];
  }

  /** Drops the pooled buffers (backend dispose). */
  clearPool(): void {
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

const CTORS = new Map<ElemType, { ctor: new (b: ArrayBufferLike) => TypedArray; slots: number; bytes: number }>();

/** An uninitialised array for `count` elements of `type` from the arena's pool. */
export function takeData(arena: Arena, type: ElemType, count: number): TypedArray {
  let info = CTORS.get(type);
  if (!info) {
    const sample = allocData(type, 1);
    info = {
      ctor: sample.constructor as new (b: ArrayBufferLike) => TypedArray,
      slots: sample.length,
      bytes: sample.BYTES_PER_ELEMENT,
    };
    CTORS.set(type, info);
  }
  return new info.ctor(arena.take(count * info.slots * info.bytes));
}

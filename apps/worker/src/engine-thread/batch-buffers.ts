/**
 * The engine thread's buffers for coalesced inputs (run-wire's ROWS tensors), kept per byte length
 * and reused from one execution to the next. A fresh buffer per execution cost a zeroed
 * allocation of the whole batch (19 MB for 32 images of 602 KB), a page fault on each of its
 * pages as the rows were copied in, and its collection later; a coalescing model runs the same few
 * compiled sizes over and over, so the same few buffers serve every execution. A buffer is taken
 * for one run and given back when that run is over (its upload finished), so no two runs in
 * flight ever share one; only the padding past the copied rows is zeroed again.
 */

/**
 * Buffers kept per byte length: as many as one model's coalesced runs in flight at once (two on a
 * device, scheduler/settings.ts); a run past that takes a fresh one, as before.
 */
export const KEPT_PER_SIZE = 2;

/** Below this a buffer is cheaper to allocate than to keep (its pages are few). */
export const POOLED_MIN_BYTES = 256 * 1024;

export class BatchBuffers {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private readonly taken = new WeakSet<ArrayBuffer>();
  /** Buffers handed out from the pool / freshly allocated, for the figures. */
  reused = 0;
  allocated = 0;

  constructor(private readonly keptPerSize = KEPT_PER_SIZE) {}

  /**
   * `byteLength` bytes for one run's joined input. The contents are left from an earlier run:
   * the caller writes every byte (its rows, then zeros for the padding).
   */
  take(byteLength: number): Uint8Array {
    const list = byteLength >= POOLED_MIN_BYTES ? this.free.get(byteLength) : undefined;
    const buffer = list?.pop();
    if (buffer) {
      this.reused++;
      this.taken.add(buffer);
      return new Uint8Array(buffer);
    }
    this.allocated++;
    const fresh = new ArrayBuffer(byteLength);
    if (byteLength >= POOLED_MIN_BYTES) this.taken.add(fresh);
    return new Uint8Array(fresh);
  }

  /** Gives back a buffer from take() once its run no longer reads it (others are ignored). */
  give(buffer: ArrayBuffer): void {
    if (!this.taken.has(buffer)) return;
    this.taken.delete(buffer);
    let list = this.free.get(buffer.byteLength);
    if (!list) {
      list = [];
      this.free.set(buffer.byteLength, list);
    }
    if (list.length < this.keptPerSize) list.push(buffer);
  }

  /** Bytes kept for reuse now. */
  keptBytes(): number {
    let n = 0;
    for (const [size, list] of this.free) n += size * list.length;
    return n;
  }
}

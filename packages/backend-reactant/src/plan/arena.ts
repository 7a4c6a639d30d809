import type { TypedArray } from "../array.ts";

/**
 * The engine's memory accounting: bytes of live buffers, counted once per storage however many
 * arrays (reshape views), slots or device buffers hold it. Peak is the high-water mark since
 * the last reset, which is what the worker's memory probe reads.
 */
export class Arena {
  private readonly refs = new Map<ArrayBufferLike, number>();
  private inUse = 0;
  private peak = 0;

  retain(data: TypedArray): void {
    const key = data.buffer;
    const count = this.refs.get(key);
    if (count === undefined) {
      this.refs.set(key, 1);
      this.inUse += key.byteLength;
      if (this.inUse > this.peak) this.peak = this.inUse;
    } else this.refs.set(key, count + 1);
  }

  release(data: TypedArray): void {
    const key = data.buffer;
    const count = this.refs.get(key);
    if (count === undefined) return;
    if (count <= 1) {
      this.refs.delete(key);
      this.inUse -= key.byteLength;
    } else this.refs.set(key, count - 1);
  }

  get inUseBytes(): number {
    return this.inUse;
  }

  get peakBytes(): number {
    return this.peak;
  }

  resetPeak(): void {
    this.peak = this.inUse;
  }
}

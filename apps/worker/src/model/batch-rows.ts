import { type HostTensor, XlaserveError, allocTyped, dtypeSize, elementCount } from "@xlaserve/core";
import { dropAborted, shiftLive } from "../scheduler/aborted-waiters.ts";
import { IdleSignal } from "../scheduler/idle-signal.ts";

/** The smallest compiled size that holds `batch`, or undefined when none does. */
export function chooseBatchSize(compiled: readonly number[], batch: number): number | undefined {
  let best: number | undefined;
  for (const size of compiled) if (size >= batch && (best === undefined || size < best)) best = size;
  return best;
}

function bytesOf(t: HostTensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/** Pads a row-major tensor with zeros along `axis` up to `size` (no copy when already that size). */
export function padAxis(tensor: HostTensor, axis: number, size: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined) throw new XlaserveError("INTERNAL", `axis ${axis} out of range for ${tensor.shape}`);
  if (current === size) return tensor;
  if (current > size) throw new XlaserveError("INTERNAL", `cannot pad axis ${axis} from ${current} down to ${size}`);
  const shape = [...tensor.shape];
  shape[axis] = size;
  const out = allocTyped(tensor.dtype, elementCount(shape));
  const esize = dtypeSize(tensor.dtype);
  const outer = elementCount(tensor.shape.slice(0, axis));
  const inner = elementCount(tensor.shape.slice(axis + 1)) * esize;
  const src = bytesOf(tensor);
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const srcBlock = current * inner;
  const dstBlock = size * inner;
  for (let o = 0; o < outer; o++) dst.set(src.subarray(o * srcBlock, (o + 1) * srcBlock), o * dstBlock);
  return { dtype: tensor.dtype, shape, data: out };
}

/** Keeps the first `size` entries along `axis` (no copy when already that size). */
export function sliceAxis(tensor: HostTensor, axis: number, size: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined || current === size) return tensor;
  if (current < size) throw new XlaserveError("INTERNAL", `cannot slice axis ${axis} from ${current} up to ${size}`);
  const shape = [...tensor.shape];
  shape[axis] = size;
  const esize = dtypeSize(tensor.dtype);
  const outer = elementCount(tensor.shape.slice(0, axis));
  const inner = elementCount(tensor.shape.slice(axis + 1)) * esize;
  const src = bytesOf(tensor);
  if (outer === 1) {
    // Leading batch axis: a prefix view, no copy.
    const data = allocTyped(tensor.dtype, elementCount(shape));
    new Uint8Array(data.buffer).set(src.subarray(0, size * inner));
    return { dtype: tensor.dtype, shape, data };
  }
  const out = allocTyped(tensor.dtype, elementCount(shape));
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const srcBlock = current * inner;
  const dstBlock = size * inner;
  for (let o = 0; o < outer; o++) dst.set(src.subarray(o * srcBlock, o * srcBlock + dstBlock), o * dstBlock);
  return { dtype: tensor.dtype, shape, data: out };
}

/** Concatenates row-major tensors (same dtype, same shape but `axis`) along `axis`. */
export function concatAxis(parts: readonly HostTensor[], axis: number): HostTensor {
  const first = parts[0];
  if (!first) throw new XlaserveError("INTERNAL", "nothing to concatenate");
  const esize = dtypeSize(first.dtype);
  const outer = elementCount(first.shape.slice(0, axis));
  const inner = elementCount(first.shape.slice(axis + 1)) * esize;
  const total = parts.reduce((a, p) => a + (p.shape[axis] ?? 0), 0);
  const shape = [...first.shape];
  shape[axis] = total;
  const out = allocTyped(first.dtype, elementCount(shape));
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const dstBlock = total * inner;
  let offset = 0;
  for (const p of parts) {
    const rows = p.shape[axis] ?? 0;
    const src = bytesOf(p);
    const block = rows * inner;
    for (let o = 0; o < outer; o++) dst.set(src.subarray(o * block, (o + 1) * block), o * dstBlock + offset * inner);
    offset += rows;
  }
  return { dtype: first.dtype, shape, data: out };
}

/** Rows [start, start + length) of `axis` as a new tensor. */
export function sliceRange(tensor: HostTensor, axis: number, start: number, length: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined || start + length > current) {
    throw new XlaserveError("INTERNAL", `cannot take rows ${start}..${start + length} of axis ${axis} (${current})`);
  }
  if (start === 0 && length === current) return tensor;
  const shape = [...tensor.shape];
  shape[axis] = length;
  const esize = dtypeSize(tensor.dtype);
  const outer = elementCount(tensor.shape.slice(0, axis));
  const inner = elementCount(tensor.shape.slice(axis + 1)) * esize;
  const src = bytesOf(tensor);
  const out = allocTyped(tensor.dtype, elementCount(shape));
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const srcBlock = current * inner;
  const dstBlock = length * inner;
  for (let o = 0; o < outer; o++) {
    dst.set(src.subarray(o * srcBlock + start * inner, o * srcBlock + (start + length) * inner), o * dstBlock);
  }
  return { dtype: tensor.dtype, shape, data: out };
}

export interface CoalescerOptions<T extends { readonly batch: number | null }, R> {
  /** Largest batch one execution may carry (the largest compiled size). */
  readonly maxBatch: number;
  /** Executions in flight at once. */
  readonly maxInFlight: number;
  /** Requests waiting beyond which QUEUE_FULL is answered. */
  readonly queueDepth: number;
  readonly label: string;
  /** Runs a group of same-variant requests as one execution; one result per request, in order. */
  readonly run: (variant: number | null, items: readonly T[]) => Promise<R[]>;
}

interface Waiting<T, R> {
  readonly variant: number | null;
  readonly item: T;
  readonly signal: AbortSignal | undefined;
  resolve(r: R): void;
  reject(e: unknown): void;
}

/**
 * Greedy request coalescing (dynamic batching with no added delay): a request that finds an
 * execution slot free runs at once; requests that arrive while executions are in flight wait and
 * leave together, as many (same variant, in arrival order) as fit in the largest compiled batch.
 * Under load one execution serves many requests; alone, a request waits for nothing.
 *
 * As in the concurrency limiter, a request aborted while it waits is dropped when a group is
 * formed or when the queue is full (aborted-waiters.ts).
 */
export class Coalescer<T extends { readonly batch: number | null }, R> {
  private readonly waiting: Waiting<T, R>[] = [];
  private inFlight = 0;
  private readonly idleSignal = new IdleSignal();

  constructor(private readonly options: CoalescerOptions<T, R>) {}

  get queued(): number {
    return this.waiting.length;
  }

  get active(): number {
    return this.inFlight;
  }

  submit(variant: number | null, item: T, signal?: AbortSignal): Promise<R> {
    const full = () => this.inFlight >= this.options.maxInFlight && this.waiting.length >= this.options.queueDepth;
    if (full()) dropAborted(this.waiting, () => this.abortedError());
    if (full()) {
      return Promise.reject(
        new XlaserveError(
          "QUEUE_FULL",
          `${this.options.label}: request queue is full (${this.inFlight} executions running, ${this.waiting.length} requests queued, queue depth ${this.options.queueDepth})`,
          { running: this.inFlight, queued: this.waiting.length, queueDepth: this.options.queueDepth },
        ),
      );
    }
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ variant, item, signal, resolve, reject });
      this.pump();
    });
  }

  private take(): Waiting<T, R>[] {
    const first = shiftLive(this.waiting, () => this.abortedError());
    if (!first) return [];
    const group = [first];
    let rows = first.item.batch ?? this.options.maxBatch;
    for (let i = 0; i < this.waiting.length; ) {
      const next = this.waiting[i] as Waiting<T, R>;
      if (next.signal?.aborted) {
        this.waiting.splice(i, 1);
        next.reject(this.abortedError());
        continue;
      }
      const b = next.item.batch;
      if (b === null || rows + b > this.options.maxBatch) break; // keep arrival order
      if (next.variant !== first.variant) {
        i++;
        continue;
      }
      group.push(next);
      rows += b;
      this.waiting.splice(i, 1);
    }
    return group;
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const group = this.take();
      const first = group[0];
      if (!first) break;
      this.inFlight++;
      this.options
        .run(
          first.variant,
          group.map((g) => g.item),
        )
        .then(
          (results) => {
            group.forEach((g, i) => {
              const r = results[i];
              if (r === undefined) g.reject(new XlaserveError("INTERNAL", "a coalesced request got no result"));
              else g.resolve(r);
            });
          },
          (err) => {
            for (const g of group) g.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
    // Dropping aborted requests may have left nothing to run.
    this.checkIdle();
  }

  private abortedError(): XlaserveError {
    return new XlaserveError("UNAVAILABLE", `${this.options.label}: request aborted while queued`);
  }

  private checkIdle(): void {
    if (this.inFlight === 0 && this.waiting.length === 0) {
      this.idleSignal.notify();
    }
  }

  idle(): Promise<void> {
    return this.idleSignal.wait(this.inFlight === 0 && this.waiting.length === 0);
  }
}

import { XlaserveError } from "@xlaserve/core";
import { dropAborted, shiftLive } from "./aborted-waiters.ts";
import { IdleSignal } from "./idle-signal.ts";

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

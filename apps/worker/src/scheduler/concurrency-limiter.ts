import { XlaserveError } from "@xlaserve/core";
import { dropAborted, shiftLive } from "./aborted-waiters.ts";
import { IdleSignal } from "./idle-signal.ts";

/**
 * A per-model concurrency limit with a bounded FIFO queue: at most `limit` requests run at once,
 * at most `queueDepth` wait; one more is refused with QUEUE_FULL (HTTP 429).
 * A waiter whose request was aborted is dropped when its turn comes or the queue is full
 * (aborted-waiters.ts).
 */
export class ConcurrencyLimiter {
  private running = 0;
  private readonly waiting: Array<{
    resolve: () => void;
    reject: (e: unknown) => void;
    signal: AbortSignal | undefined;
  }> = [];
  private readonly idleSignal = new IdleSignal();

  constructor(
    readonly limit: number,
    readonly queueDepth: number,
    private readonly label = "model",
  ) {
    if (!(limit >= 1)) throw new RangeError(`concurrency limit must be >= 1, got ${limit}`);
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Takes a slot when one is free and nobody waits, without a promise: true means held (call
   * `release()` once afterwards), false that the caller must acquire() and wait its turn.
   */
  tryAcquire(): boolean {
    if (this.running < this.limit && this.waiting.length === 0) {
      this.running++;
      return true;
    }
    return false;
  }

  /** Resolves once a slot is held; the caller must call `release()` exactly once afterwards. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.running < this.limit && this.waiting.length === 0) {
      this.running++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.queueDepth) dropAborted(this.waiting, () => this.abortedError());
    if (this.waiting.length >= this.queueDepth) {
      return Promise.reject(
        new XlaserveError(
          "QUEUE_FULL",
          `${this.label}: request queue is full (${this.running} running, ${this.waiting.length} queued, limit ${this.limit}, queue depth ${this.queueDepth})`,
          { running: this.running, queued: this.waiting.length, queueDepth: this.queueDepth },
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject, signal });
    });
  }

  release(): void {
    const next = shiftLive(this.waiting, () => this.abortedError());
    if (next) {
      next.resolve(); // the slot passes straight to the next waiter
      return;
    }
    this.running--;
    if (this.running === 0) {
      this.idleSignal.notify();
    }
  }

  private abortedError(): XlaserveError {
    return new XlaserveError("UNAVAILABLE", `${this.label}: request aborted while queued`);
  }

  /** Resolves when nothing runs and nothing waits. */
  idle(): Promise<void> {
    return this.idleSignal.wait(this.running === 0 && this.waiting.length === 0);
  }
}

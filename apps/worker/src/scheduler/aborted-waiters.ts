/**
 * Queued requests whose caller went away (their signal aborted) are dropped when their turn comes
 * or when the queue is full, not by a listener on every queued request's signal: the listeners
 * cost about 6% of the HTTP thread under load, and the work is skipped either way. Shared by the
 * concurrency limiter and the batcher.
 */
export interface AbortableWaiter {
  readonly signal: AbortSignal | undefined;
  reject(e: unknown): void;
}

/** Rejects with `error()` and removes every aborted waiter. */
export function dropAborted(queue: AbortableWaiter[], error: () => unknown): void {
  for (let i = queue.length - 1; i >= 0; i--) {
    const w = queue[i];
    if (w?.signal?.aborted) {
      queue.splice(i, 1);
      w.reject(error());
    }
  }
}

/** The first waiter whose caller still waits, taken off the queue; aborted ones before it are rejected. */
export function shiftLive<T extends AbortableWaiter>(queue: T[], error: () => unknown): T | undefined {
  for (let next = queue.shift(); next; next = queue.shift()) {
    if (!next.signal?.aborted) return next;
    next.reject(error());
  }
  return undefined;
}

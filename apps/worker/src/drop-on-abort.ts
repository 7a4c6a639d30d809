/**
 * Takes a queued request out of its queue when the caller's signal aborts while it still waits,
 * then calls `onDropped` (which rejects it). One already dequeued to run is left alone: it runs
 * to completion. Shared by the concurrency limiter and the batcher.
 */
export function dropOnAbort<T>(queue: T[], entry: T, signal: AbortSignal | undefined, onDropped: () => void): void {
  signal?.addEventListener(
    "abort",
    () => {
      const i = queue.indexOf(entry);
      if (i >= 0) {
        queue.splice(i, 1);
        onDropped();
      }
    },
    { once: true },
  );
}

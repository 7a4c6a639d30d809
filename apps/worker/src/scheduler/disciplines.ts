import { fairScore } from "./fair-share.ts";
import type { ModelQueue } from "./model-queue.ts";

export type Discipline = "fifo" | "fair" | "edf";

/** The cost key of an execution: its compiled size (0 where the request's own size decides). */
export function costKey(size: number | undefined): number {
  return size ?? 0;
}

/**
 * Which of the queues ready to run goes next. Priority levels come first: only queues whose
 * front request has the best level compete. Among those, fifo takes the oldest front request;
 * edf the queue holding the earliest deadline (no deadline: last), then the oldest front; fair
 * the highest score (fair-share.ts) over every queue's weight and recent device time, then the
 * oldest front. `all` is every registered queue (idle ones keep their share).
 */
export function selectQueue<P, R>(
  discipline: Discipline,
  ready: readonly ModelQueue<P, R>[],
  all: Iterable<ModelQueue<P, R>>,
  now: number,
  fairnessCap: number,
): ModelQueue<P, R> | undefined {
  let level = Number.POSITIVE_INFINITY;
  for (const q of ready) level = Math.min(level, (q.head as { level: number }).level);
  const candidates = ready.filter((q) => q.head?.level === level);
  const oldest = (a: ModelQueue<P, R>, b: ModelQueue<P, R>) => (a.head?.seq ?? 0) - (b.head?.seq ?? 0);
  if (discipline === "fifo" || candidates.length < 2) return candidates.sort(oldest)[0];
  if (discipline === "edf") {
    return candidates.sort((a, b) => a.earliestDeadline() - b.earliestDeadline() || oldest(a, b))[0];
  }
  let totalWeight = 0;
  let totalRecent = 0;
  for (const q of all) {
    totalWeight += q.fair.weight;
    totalRecent += q.fair.recent(now);
  }
  let best: ModelQueue<P, R> | undefined;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const q of candidates) {
    const share = totalWeight > 0 ? q.fair.weight / totalWeight : 0;
    // Nothing measured yet: every model's recent share is zero, and the deficit is its share.
    const recent = totalRecent > 0 ? q.fair.recent(now) / totalRecent : 0;
    const score = fairScore(share, recent, fairnessCap, q.fair.cost(costKey(q.plan().size)));
    if (best === undefined || score > bestScore || (score === bestScore && oldest(q, best) < 0)) {
      best = q;
      bestScore = score;
    }
  }
  return best;
}

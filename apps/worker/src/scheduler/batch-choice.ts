/** The rows an execution takes from the front of a queue and the compiled size it runs at. */
export interface BatchChoice {
  /** Compiled batch size (undefined: the smallest that holds the one request taken). */
  readonly size: number | undefined;
  /** Requests taken from the front of the queue. */
  readonly take: number;
  /** Rows those requests carry. */
  readonly rows: number;
}

export interface BatchRule {
  /** Ascending. */
  readonly compiledBatchSizes: readonly number[];
  /** Rows one execution may carry at most (the model's maxBatchSize); the compiled size may be larger, padded. */
  readonly maxRows?: number;
  /** Compiled sizes to run at whenever the queue can fill one (the largest such wins). */
  readonly preferred?: readonly number[];
}

/** Seconds one execution at a compiled size is known to take (undefined: not measured yet). */
export type MeasuredCost = (size: number) => number | undefined;

type QueueRows = ReadonlyArray<{ readonly variant: number | null; readonly rows: number | null }>;

/**
 * Coalescing of queued requests into one execution, taken in queue order from the front, among
 * the leading requests of the front one's variant (queue order is kept): with R the rows queued
 * there (at most maxRows), the execution runs at the largest preferred size R fills, else at the
 * fill size: the largest compiled size R fills, else (R below every size) the smallest, padded.
 * With `cost` (each size's measured execution time), a size that runs more rows per second than
 * the fill size, padding included, wins instead: sizes 1 and 32 with 20 rows queued run them at
 * 32 when that costs less than twenty runs at 1. A size not measured yet runs once whenever it
 * would carry more rows than the fill size, so each gets measured. A request is never split: one
 * larger than the chosen size grows it to the smallest size that holds it, and the requests
 * taken are those that fit in order. `queue` lists the queue's requests front first: their
 * variant and rows (null: no batch axis, which always runs alone).
 */
export function chooseBatch(queue: QueueRows, rule: BatchRule, cost?: MeasuredCost): BatchChoice {
  const front = queue[0];
  if (!front || front.rows === null) return { size: undefined, take: front ? 1 : 0, rows: front?.rows ?? 0 };
  const sizes = rule.compiledBatchSizes;
  const cap = rule.maxRows ?? Number.POSITIVE_INFINITY;
  let queued = 0;
  for (const r of queue) {
    if (r.variant !== front.variant || r.rows === null) break;
    queued += r.rows;
    if (queued >= cap) break;
  }
  const fillable = Math.min(queued, cap);
  const minSize = sizes[0] as number;
  const maxSize = sizes[sizes.length - 1] as number;
  const preferred = largestAtMost(rule.preferred ?? [], Math.min(fillable, maxSize), sizes);
  let size = preferred ?? (fillable >= minSize ? (largestAtMost(sizes, fillable, sizes) ?? minSize) : minSize);
  if (size < front.rows) size = sizes.find((s) => s >= (front.rows as number)) ?? maxSize;
  const fill = takeAt(queue, size, cap);
  if (preferred !== undefined || !cost) return fill;
  return fastestPerRow(queue, sizes, cap, fill, cost);
}

/** The requests that fit, in order, in one execution at `size` (at least the front one). */
function takeAt(queue: QueueRows, size: number, cap: number): BatchChoice {
  const front = queue[0] as { readonly variant: number | null; readonly rows: number };
  const bound = Math.min(size, cap);
  let take = 0;
  let rows = 0;
  for (const r of queue) {
    if (r.variant !== front.variant || r.rows === null || rows + r.rows > bound) break;
    rows += r.rows;
    take++;
  }
  if (take === 0) return { size, take: 1, rows: front.rows };
  return { size, take, rows };
}

/**
 * Among the compiled sizes that hold the front request, the execution that runs the queue's rows
 * fastest by the measured costs (the fill choice on a tie); an unmeasured size that would carry
 * more rows than the fill choice runs first, to be measured (as does an unmeasured fill size).
 */
function fastestPerRow(
  queue: QueueRows,
  sizes: readonly number[],
  cap: number,
  fill: BatchChoice,
  cost: MeasuredCost,
): BatchChoice {
  const fillSize = fill.size as number;
  const fillCost = cost(fillSize);
  if (fillCost === undefined) return fill;
  let best = fill;
  let bestRate = fill.rows / Math.max(fillCost, 1e-9);
  const frontRows = (queue[0] as { readonly rows: number }).rows;
  for (const s of sizes) {
    if (s < frontRows || s === fillSize) continue;
    const choice = takeAt(queue, s, cap);
    const seconds = cost(s);
    if (seconds === undefined) {
      if (choice.rows > fill.rows) return choice;
      continue;
    }
    const rate = choice.rows / Math.max(seconds, 1e-9);
    if (rate > bestRate * 1.01) {
      best = choice;
      bestRate = rate;
    }
  }
  return best;
}

/** The largest of `candidates` that is a compiled size and at most `limit`. */
function largestAtMost(candidates: readonly number[], limit: number, sizes: readonly number[]): number | undefined {
  let best: number | undefined;
  for (const c of candidates) if (c <= limit && sizes.includes(c) && (best === undefined || c > best)) best = c;
  return best;
}

/**
 * Rows a delay window waits for before a partial batch leaves: the smallest preferred size (a
 * preferred batch can leave then), else the largest compiled size; at most maxRows.
 */
export function targetRows(rule: BatchRule): number {
  const sizes = rule.compiledBatchSizes;
  const preferred = (rule.preferred ?? []).filter((p) => sizes.includes(p));
  const target = preferred.length > 0 ? Math.min(...preferred) : (sizes[sizes.length - 1] as number);
  return Math.min(target, rule.maxRows ?? Number.POSITIVE_INFINITY);
}

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

/**
 * Coalescing of queued requests into one execution, taken in queue order from the front, among
 * the leading requests of the front one's variant (queue order is kept): with R the rows queued
 * there (at most maxRows), the execution runs at the largest preferred size R fills, else the
 * largest compiled size R fills, else (R below every size) the smallest size, padded. A request
 * is never split: one larger than that size grows it to the smallest size that holds it, and the
 * requests taken are those that fit in order. `rows` lists the queue's requests front first:
 * their variant and rows (null: no batch axis, which always runs alone).
 */
export function chooseBatch(
  queue: ReadonlyArray<{ readonly variant: number | null; readonly rows: number | null }>,
  rule: BatchRule,
): BatchChoice {
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
  let size = largestAtMost(rule.preferred ?? [], Math.min(fillable, maxSize), sizes);
  if (size === undefined) size = fillable >= minSize ? (largestAtMost(sizes, fillable, sizes) ?? minSize) : minSize;
  if (size < front.rows) size = sizes.find((s) => s >= (front.rows as number)) ?? maxSize;
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

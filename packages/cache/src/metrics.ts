/**
 * Cache counters as a plain object: the worker's /metrics reads the fields directly. Counts are
 * since the cache was opened in this process; `entries` and `bytes` are the index's current
 * totals.
 */
export interface CacheCounters {
  hits: number;
  misses: number;
  /** Entries that were found bad (corrupt, foreign, wrong format), removed and recompiled. */
  recompiles: number;
  compiles: number;
  /** Successful deserializations from the cache. */
  loads: number;
  corruptEntries: number;
  foreignEntries: number;
  evictions: number;
  bytesWritten: number;
  bytesRead: number;
  compileMsTotal: number;
  loadMsTotal: number;
  entries: number;
  bytes: number;
}

export function emptyCounters(): CacheCounters {
  return {
    hits: 0,
    misses: 0,
    recompiles: 0,
    compiles: 0,
    loads: 0,
    corruptEntries: 0,
    foreignEntries: 0,
    evictions: 0,
    bytesWritten: 0,
    bytesRead: 0,
    compileMsTotal: 0,
    loadMsTotal: 0,
    entries: 0,
    bytes: 0,
  };
}

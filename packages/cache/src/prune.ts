import { rmSync } from "node:fs";
import type { CacheEntryRow } from "./db/schema.ts";
import type { IndexStore } from "./index-store.ts";

export interface PruneReport {
  readonly removed: readonly CacheEntryRow[];
  readonly freedBytes: number;
  readonly remainingBytes: number;
  readonly remainingEntries: number;
}

/**
 * Removes least-recently-hit entries until the total is at most `maxBytes`. Expects a
 * reconciled index (sizes that match the files). Removing an entry another process is loading
 * is safe: an open file stays readable after unlink, and the next start simply recompiles.
 */
export function pruneLru(store: IndexStore, maxBytes: number): PruneReport {
  const rows = store.lruOrder();
  let total = rows.reduce((s, r) => s + r.sizeBytes, 0);
  const removed: CacheEntryRow[] = [];
  for (const row of rows) {
    if (total <= maxBytes) break;
    rmSync(row.path, { force: true });
    store.remove(row.path);
    total -= row.sizeBytes;
    removed.push(row);
  }
  return {
    removed,
    freedBytes: removed.reduce((s, r) => s + r.sizeBytes, 0),
    remainingBytes: total,
    remainingEntries: rows.length - removed.length,
  };
}

import { basename } from "node:path";
import type { CacheEntryRow } from "../db/schema.ts";
import { type CacheCommandOptions, openForCommand } from "./open.ts";
import { formatBytes, formatMs, formatTime } from "./out.ts";
import { formatTable } from "./table.ts";

/** `xlaserve cache ls`: every entry with its size, timings and hit statistics. */
export async function cacheLs(opts: CacheCommandOptions): Promise<CacheEntryRow[]> {
  const cache = await openForCommand(opts);
  try {
    const rows = cache.ls();
    const table = rows.map((r) => [
      r.bundle,
      r.moduleFile ?? `${r.moduleSha256.slice(0, 12)}…`,
      r.partition,
      basename(r.entry).slice(0, 12),
      formatBytes(r.sizeBytes),
      formatMs(r.compileMs),
      formatMs(r.loadMs),
      String(r.hitCount),
      formatTime(r.lastHitAt),
    ]);
    opts.out.write(
      formatTable(
        ["model", "module", "partition", "entry", "size", "compile ms", "load ms", "hits", "last hit"],
        table,
        ["left", "left", "left", "left", "right", "right", "right", "right", "left"],
      ),
    );
    const total = rows.reduce((s, r) => s + r.sizeBytes, 0);
    opts.out.write(`${rows.length} entries, ${formatBytes(total)}\n`);
    return rows;
  } finally {
    cache.close();
  }
}

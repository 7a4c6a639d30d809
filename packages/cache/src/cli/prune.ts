import type { PruneReport } from "../prune.ts";
import { type CacheCommandOptions, openForCommand } from "./open.ts";
import { formatBytes, formatTime } from "./out.ts";
import { formatTable } from "./table.ts";

/** `xlaserve cache prune --max-bytes N`: evicts least recently hit entries down to N bytes. */
export async function cachePrune(opts: CacheCommandOptions & { readonly maxBytes: number }): Promise<PruneReport> {
  const cache = await openForCommand(opts);
  try {
    const report = cache.prune(opts.maxBytes);
    if (report.removed.length > 0) {
      opts.out.write(
        formatTable(
          ["model", "module", "partition", "size", "last hit"],
          report.removed.map((r) => [
            r.bundle,
            r.moduleFile ?? r.moduleSha256.slice(0, 12),
            r.partition,
            formatBytes(r.sizeBytes),
            formatTime(r.lastHitAt),
          ]),
          ["left", "left", "left", "right", "left"],
        ),
      );
    }
    opts.out.write(
      `pruned ${report.removed.length} entries (${formatBytes(report.freedBytes)}); ${report.remainingEntries} remain (${formatBytes(report.remainingBytes)} of ${formatBytes(opts.maxBytes)} allowed)\n`,
    );
    return report;
  } finally {
    cache.close();
  }
}

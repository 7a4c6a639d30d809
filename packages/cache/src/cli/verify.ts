import { type FleetVerifyReport, verifyFleet } from "../fleet/verify-fleet.ts";
import type { VerifyReport } from "../verify.ts";
import { type CacheCommandOptions, openForCommand } from "./open.ts";
import { formatBytes } from "./out.ts";
import { formatTable } from "./table.ts";

/**
 * `xlaserve cache verify`: checks every entry in full; bad ones are removed and listed. With a
 * fleet, every program of its catalog too (blob against the catalog's size and sha256, then the
 * entry's own checks); bad ones are dropped from the catalog and the store.
 */
export async function cacheVerify(opts: CacheCommandOptions): Promise<VerifyReport & { fleet?: FleetVerifyReport }> {
  const cache = await openForCommand(opts);
  try {
    const report = cache.verify();
    if (report.removed.length > 0) {
      opts.out.write(
        formatTable(
          ["model", "entry", "reason", "detail"],
          report.removed.map((p) => [p.bundle, p.path.split(/[\\/]/).slice(-2).join("/"), p.reason, p.detail]),
        ),
      );
    }
    opts.out.write(
      `verified ${report.checked} entries: ${report.ok} ok (${formatBytes(report.bytes)}), ${report.removed.length} removed\n`,
    );
    if (!cache.fleet) return report;
    const fleet = await verifyFleet(cache.fleet);
    if (fleet.removed.length > 0) {
      opts.out.write(
        formatTable(
          ["program", "blob", "reason"],
          fleet.removed.map((p) => [p.key, p.blob, p.reason]),
        ),
      );
    }
    opts.out.write(
      `verified ${fleet.checked} fleet programs: ${fleet.ok} ok (${formatBytes(fleet.bytes)}), ${fleet.removed.length} removed (${cache.fleet.where})\n`,
    );
    return { ...report, fleet };
  } finally {
    cache.close();
    await cache.closed;
  }
}

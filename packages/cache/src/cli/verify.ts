import type { VerifyReport } from "../verify.ts";
import { type CacheCommandOptions, openForCommand } from "./open.ts";
import { formatBytes } from "./out.ts";
import { formatTable } from "./table.ts";

/** `xlaserve cache verify`: checks every entry in full; bad ones are removed and listed. */
export async function cacheVerify(opts: CacheCommandOptions): Promise<VerifyReport> {
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
    return report;
  } finally {
    cache.close();
  }
}

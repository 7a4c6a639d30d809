import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { cacheFiles } from "../cache-files.ts";
import type { ClientTally } from "../clients.ts";
import { type SuiteContext, freshRepo, scratchDir } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { addTally, checkAnswers } from "../tallies.ts";
import { type BundleVersion, installVersion } from "../versions.ts";
import { spawnWorker } from "../worker-process.ts";

/** Whether this process may mount a filesystem (root, and the kernel lets it). */
export function canMount(dir: string): boolean {
  if (process.getuid?.() !== 0) return false;
  mkdirSync(dir, { recursive: true });
  const ok = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]).exitCode === 0;
  if (ok) Bun.spawnSync(["umount", dir]);
  return ok;
}

/** The state directory on a full disk (a 1 MiB tmpfs filled up), then space given back. */
export async function diskFull(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const mount = scratchDir(ctx, "small-disk");
  mkdirSync(mount, { recursive: true });
  if (Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount]).exitCode !== 0) {
    throw new Error(`cannot mount a tmpfs at ${mount}`);
  }
  try {
    const fill = join(mount, "fill");
    const fd = openSync(fill, "w");
    try {
      for (;;) writeSync(fd, new Uint8Array(64 * 1024));
    } catch {
      /* ENOSPC: full */
    }
    closeSync(fd);
    const stateDir = join(mount, "state");
    const w = spawnWorker({ ...repo, stateDir, pollMs: 30, env: { XLASERVE_TEST_CACHE_RETRY_MS: "200" } });
    let survived = false;
    let recover: number | null = null;
    let tally: ClientTally | null = null;
    let notes = "";
    try {
      await w.ready;
      tally = await checkAnswers(ctx, w, 0);
      const degraded = (await (await fetch(`${w.url}/metrics`)).text()).includes("xlaserve_cache_degraded 1");
      const since = w.logs.length;
      const t0 = Date.now();
      rmSync(fill);
      await w.waitLog("program cache available again: programs are cached from the next load on", 10_000, since);
      recover = Date.now() - t0;
      installVersion(repo.mlp, ctx.versions[1] as BundleVersion);
      addTally(tally, await checkAnswers(ctx, w, 1));
      const cached = cacheFiles(join(repo.mlp, ".cache")).some((f) => f.endsWith(".xprog"));
      const healthy = (await (await fetch(`${w.url}/metrics`)).text()).includes("xlaserve_cache_degraded 0");
      survived = w.alive() && tally.last === 1 && degraded && cached && healthy;
      notes = `served uncached while full (degraded metric ${degraded ? "1" : "not 1"}); ${cached ? "cached again" : "not cached"} after space returned`;
    } catch (e) {
      notes = (e as Error).message;
    }
    await w.stop();
    return row("full disk under the state directory", 1, survived, tally, recover, notes);
  } finally {
    Bun.spawnSync(["umount", "-l", mount]);
  }
}

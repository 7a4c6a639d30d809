/** Faults a restart must get over: a kill mid-compile, damaged cache files, a damaged index. */
import { Database } from "bun:sqlite";
import { closeSync, openSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { cacheFiles, flipBytes, warmRepo } from "../cache-files.ts";
import { type SuiteContext, freshRepo, sleep } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { restartCases } from "../tallies.ts";
import { spawnWorker } from "../worker-process.ts";

/** kill -9 while the cold start compiles and writes the cache; the next start must serve at once. */
export async function killDuringCompile(ctx: SuiteContext): Promise<FaultRow> {
  const cases = 2 * ctx.scale;
  const { total, worst, survived } = await restartCases(ctx, cases, async () => {
    const repo = freshRepo(ctx);
    // Compiles take 400 ms each, so the kill lands in a compile (holding its lock) or a write.
    const slow = spawnWorker({ ...repo, env: { XLASERVE_TEST_COMPILE_DELAY_MS: "400" } });
    await slow.waitLog("engine selected", 30_000).catch(() => {});
    await sleep(100 + ctx.random() * 900);
    slow.proc.kill("SIGKILL");
    await slow.proc.exited;
    return repo;
  });
  return row(
    "kill -9 during compile and cache write",
    cases,
    survived,
    total,
    worst,
    "restart to ready; the dead worker's compile locks taken over",
  );
}

/** Random bytes of the program cache's entry files (and mlir_hashes.json) overwritten between starts. */
export async function cacheCorruption(ctx: SuiteContext): Promise<FaultRow> {
  const repo = await warmRepo(ctx);
  const cases = 3 * ctx.scale;
  const { total, worst, survived } = await restartCases(ctx, cases, () => {
    for (const f of cacheFiles(join(repo.mlp, ".cache"))) {
      if (ctx.random() < 0.7) flipBytes(f, ctx.random, 1 + Math.floor(ctx.random() * 8));
    }
    return repo;
  });
  return row(
    "random corruption of cache files",
    cases,
    survived,
    total,
    worst,
    "restart to ready; bad entries removed and recompiled",
  );
}

/** Random pages of the SQLite index damaged between starts. */
export async function indexCorruption(ctx: SuiteContext): Promise<FaultRow> {
  const repo = await warmRepo(ctx);
  const db = join(repo.stateDir, "xlaserve.sqlite");
  const cases = 3 * ctx.scale;
  const { total, worst, survived } = await restartCases(ctx, cases, () => {
    // Folded into the main file first, so the damage is in what the next start reads.
    const raw = new Database(db);
    raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    raw.close();
    const pages = Math.max(1, Math.floor(statSync(db).size / 4096));
    const page = 1 + Math.floor(ctx.random() * Math.max(1, pages - 1));
    const fd = openSync(db, "r+");
    const junk = new Uint8Array(64).map(() => Math.floor(ctx.random() * 256));
    for (let k = 0; k < 16; k++) writeSync(fd, junk, 0, 64, page * 4096 + 512 + k * 200);
    closeSync(fd);
    return repo;
  });
  return row(
    "damaged pages of the cache index",
    cases,
    survived,
    total,
    worst,
    "restart to ready; index set aside and rebuilt",
  );
}

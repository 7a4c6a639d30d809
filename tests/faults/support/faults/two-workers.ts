import { runClients } from "../clients.ts";
import { type SuiteContext, freshRepo } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { addTally, emptyTally } from "../tallies.ts";
import { type BundleVersion, installVersion } from "../versions.ts";
import { spawnWorker } from "../worker-process.ts";

/** Two workers started at once on one repository and state directory, then a new version. */
export async function twoWorkers(ctx: SuiteContext): Promise<FaultRow> {
  const cases = ctx.scale;
  const total = emptyTally();
  let worst = 0;
  let survived = true;
  for (let i = 0; i < cases; i++) {
    const repo = freshRepo(ctx);
    const a = spawnWorker({ ...repo, pollMs: 30 });
    const b = spawnWorker({ ...repo, pollMs: 30 });
    try {
      await Promise.all([a.ready, b.ready]);
      const ca = runClients(() => a.url, ctx.body, ctx.expected, 2);
      const cb = runClients(() => b.url, ctx.body, ctx.expected, 2);
      await Promise.all([ca.until(0), cb.until(0)]);
      const t0 = Date.now();
      installVersion(repo.mlp, ctx.versions[1] as BundleVersion);
      await Promise.all([ca.until(1), cb.until(1)]).catch(() => {});
      worst = Math.max(worst, Date.now() - t0);
      const ta = await ca.stop();
      const tb = await cb.stop();
      addTally(total, ta);
      addTally(total, tb);
      survived &&= a.alive() && b.alive() && ta.last === 1 && tb.last === 1;
    } catch {
      survived = false;
    }
    await Promise.all([a.stop(), b.stop()]);
  }
  return row("two workers on one repository", cases, survived, total, worst, "cold start together, then a new version");
}

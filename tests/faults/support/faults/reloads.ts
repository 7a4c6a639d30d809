/** Faults while the watcher reloads the model: files rewritten, truncated, half written, swapped fast. */
import { truncateSync } from "node:fs";
import { join } from "node:path";
import { runClients } from "../clients.ts";
import { type SuiteContext, freshRepo, sleep, started } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { type BundleVersion, copyOverVersion, installVersion } from "../versions.ts";
import { finish } from "../tallies.ts";
import { spawnWorker } from "../worker-process.ts";

/** Weights rewritten in place (cp over the live file) and truncated at random moments of reloads. */
export async function truncateDuringReload(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker({ ...repo, pollMs: 30 }));
  const clients = runClients(() => w.url, ctx.body, ctx.expected);
  const cases = 6 * ctx.scale;
  let worst = 0;
  let target = 0;
  for (let i = 0; i < cases; i++) {
    target = 1 - target;
    const v = ctx.versions[target] as BundleVersion;
    copyOverVersion(repo.mlp, v);
    await sleep(ctx.random() * 80);
    truncateSync(join(repo.mlp, "weights.safetensors"), Math.floor(ctx.random() * v.weights.length));
    await sleep(60 + ctx.random() * 120);
    const t0 = Date.now();
    copyOverVersion(repo.mlp, v);
    await clients.until(target).catch(() => {});
    worst = Math.max(worst, Date.now() - t0);
    if (!w.alive()) break;
  }
  const { tally, survived } = await finish(w, clients);
  return row(
    "weights truncated in place during reloads",
    cases,
    survived && tally.last === target,
    tally,
    worst,
    "cp over the live file, truncate at random",
  );
}

/** A new export's weights half-written in place, left still for many polls, then completed. */
export async function halfWritten(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker({ ...repo, pollMs: 30 }));
  const clients = runClients(() => w.url, ctx.body, ctx.expected);
  const cases = 2 * ctx.scale;
  let worst = 0;
  let current = 0;
  let servedHalf = 0;
  for (let i = 0; i < cases; i++) {
    const next = 1 - current;
    const v = ctx.versions[next] as BundleVersion;
    const old = ctx.versions[current] as BundleVersion;
    // Same size, the first part of the new weights over the old: only the manifest's sha256 tells.
    const half = Uint8Array.from(old.weights);
    const cut = Math.floor(v.weights.length * (0.2 + 0.6 * ctx.random()));
    half.set(v.weights.subarray(0, cut));
    copyOverVersion(repo.mlp, { weights: half, manifest: v.manifest });
    const before = clients.tally.firstSeen.get(next) ?? 0;
    await sleep(400);
    if ((clients.tally.firstSeen.get(next) ?? 0) !== before) servedHalf++;
    const t0 = Date.now();
    copyOverVersion(repo.mlp, v);
    await clients.until(next).catch(() => {});
    worst = Math.max(worst, Date.now() - t0);
    current = next;
  }
  const { tally, survived } = await finish(w, clients);
  return row(
    "half-written weights, still for 13 polls",
    cases,
    survived && tally.last === current,
    tally,
    worst,
    `${servedHalf} half-written versions served`,
  );
}

/** Versions swapped faster than loads finish. */
export async function reloadStorm(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker({ ...repo, pollMs: 20 }));
  const clients = runClients(() => w.url, ctx.body, ctx.expected);
  const cases = 25 * ctx.scale;
  let target = 0;
  for (let i = 0; i < cases; i++) {
    target = ctx.random() < 0.5 ? 0 : 1;
    installVersion(repo.mlp, ctx.versions[target] as BundleVersion);
    await sleep(ctx.random() * 60);
  }
  const t0 = Date.now();
  await clients.until(target).catch(() => {});
  const recover = Date.now() - t0;
  const { tally, survived } = await finish(w, clients);
  return row("reload storm", cases, survived && tally.last === target, tally, recover, "atomic swaps every 0-60 ms");
}

import { type ClientTally, runClients } from "./clients.ts";
import { type FaultRepo, type SuiteContext, sleep } from "./context.ts";
import { spawnWorker, type WorkerProcess } from "./worker-process.ts";

/** Answers right after a (re)start: ready, and the logits of the version on disk. */
export async function checkAnswers(ctx: SuiteContext, w: WorkerProcess, version: number): Promise<ClientTally> {
  const clients = runClients(() => w.url, ctx.body, ctx.expected, 2);
  await clients.until(version, 15_000).catch(() => {});
  await sleep(50);
  return clients.stop();
}

export function addTally(into: ClientTally, t: ClientTally): void {
  into.ok += t.ok;
  into.wrong += t.wrong;
  into.requests += t.requests;
  for (const [s, n] of Object.entries(t.statuses)) into.statuses[s] = (into.statuses[s] ?? 0) + n;
  into.last = t.last;
}

export function emptyTally(): ClientTally {
  return { requests: 0, ok: 0, wrong: 0, statuses: {}, unanswered: 0, last: -1, firstSeen: new Map() };
}

/** Stops the clients, then the worker: what the clients saw, and whether the worker lived to the end. */
export async function finish(
  w: WorkerProcess,
  clients: { stop(): Promise<ClientTally> },
): Promise<{ tally: ClientTally; survived: boolean }> {
  const tally = await clients.stop();
  const survived = w.alive();
  await w.stop();
  return { tally, survived };
}

/** What a run of restarts saw: every answer after them, the slowest restart, whether all served. */
export interface RestartTally {
  readonly total: ClientTally;
  readonly worst: number;
  readonly survived: boolean;
}

/**
 * `cases` times: `harm` does its damage and says to which repository, then a worker starts on it
 * and must become ready and answer with version 0. The time to ready is the recovery time.
 */
export async function restartCases(
  ctx: SuiteContext,
  cases: number,
  harm: () => FaultRepo | Promise<FaultRepo>,
): Promise<RestartTally> {
  const total = emptyTally();
  let worst = 0;
  let survived = true;
  for (let i = 0; i < cases; i++) {
    const repo = await harm();
    const t0 = Date.now();
    const w = spawnWorker(repo);
    try {
      await w.ready;
      worst = Math.max(worst, Date.now() - t0);
      addTally(total, await checkAnswers(ctx, w, 0));
      survived &&= total.last === 0;
    } catch {
      survived = false;
    }
    await w.stop();
  }
  return { total, worst, survived };
}

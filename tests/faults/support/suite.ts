import { Database } from "bun:sqlite";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeSync,
  closeSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXAMPLES, copyBundle } from "../../e2e/helpers.ts";
import { expectedLogits, mlpInput } from "./answers.ts";
import { type ClientTally, runClients } from "./clients.ts";
import { type BundleVersion, copyOverVersion, installVersion, mlpVersions } from "./versions.ts";
import { type WorkerProcess, spawnWorker } from "./worker-process.ts";

/** One row of the fault table. */
export interface FaultRow {
  readonly fault: string;
  readonly cases: number;
  /** The worker process never died (restarts the case itself made aside) and served after. */
  readonly survived: boolean;
  /** 200 answers that matched no version the bundle ever had (must be 0). */
  readonly wrongAnswers: number;
  /** Worst time from the end of the fault to serving the right answers again (ms). */
  readonly recoverMs: number | null;
  readonly notes: string;
}

/** A seeded generator, so a failing run can be repeated (FAULTS_SEED). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

export interface SuiteContext {
  readonly scale: number;
  readonly random: () => number;
  readonly root: string;
  readonly versions: BundleVersion[];
  readonly expected: Float32Array[];
  readonly body: string;
  cleanup(): void;
}

export async function suiteContext(scale: number, seed: number): Promise<SuiteContext> {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-faults-"));
  const versions = mlpVersions(root);
  const { tensor, body } = mlpInput(EXAMPLES);
  const expected: Float32Array[] = [];
  for (const [i, v] of versions.entries()) {
    const dir = join(root, `expected-${i}`, "mlp");
    copyBundle("mlp", dir);
    installVersion(dir, v);
    expected.push(await expectedLogits(dir, tensor));
  }
  return {
    scale,
    random: rng(seed),
    root,
    versions,
    expected,
    body,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

let repoCount = 0;
function freshRepo(ctx: SuiteContext): { repository: string; stateDir: string; mlp: string } {
  const base = join(ctx.root, `repo-${repoCount++}`);
  const repository = join(base, "models");
  copyBundle("mlp", join(repository, "mlp"));
  return { repository, stateDir: join(base, "state"), mlp: join(repository, "mlp") };
}

const sleep = (ms: number) => Bun.sleep(ms);

function row(
  fault: string,
  cases: number,
  survived: boolean,
  tally: ClientTally | null,
  recoverMs: number | null,
  notes: string,
): FaultRow {
  const statuses = tally
    ? Object.entries(tally.statuses)
        .map(([s, n]) => `${n}x${s}`)
        .join(" ")
    : "";
  return {
    fault,
    cases,
    survived,
    wrongAnswers: tally?.wrong ?? 0,
    recoverMs: recoverMs === null ? null : Math.round(recoverMs),
    notes: [notes, tally ? `${tally.ok} answers checked` : "", statuses ? `other answers: ${statuses}` : ""]
      .filter(Boolean)
      .join("; "),
  };
}

async function started(w: WorkerProcess): Promise<WorkerProcess> {
  await w.ready;
  return w;
}

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
  const tally = await clients.stop();
  const survived = w.alive();
  await w.stop();
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
  const tally = await clients.stop();
  const survived = w.alive();
  await w.stop();
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
  const tally = await clients.stop();
  const survived = w.alive();
  await w.stop();
  return row("reload storm", cases, survived && tally.last === target, tally, recover, "atomic swaps every 0-60 ms");
}

/** Answers right after a (re)start: ready, and the logits of the version on disk. */
async function checkAnswers(ctx: SuiteContext, w: WorkerProcess, version: number): Promise<ClientTally> {
  const clients = runClients(() => w.url, ctx.body, ctx.expected, 2);
  await clients.until(version, 15_000).catch(() => {});
  await sleep(50);
  return clients.stop();
}

function addTally(into: ClientTally, t: ClientTally): void {
  into.ok += t.ok;
  into.wrong += t.wrong;
  into.requests += t.requests;
  for (const [s, n] of Object.entries(t.statuses)) into.statuses[s] = (into.statuses[s] ?? 0) + n;
  into.last = t.last;
}

function emptyTally(): ClientTally {
  return { requests: 0, ok: 0, wrong: 0, statuses: {}, unanswered: 0, last: -1, firstSeen: new Map() };
}

/** kill -9 while the cold start compiles and writes the cache; the next start must serve at once. */
export async function killDuringCompile(ctx: SuiteContext): Promise<FaultRow> {
  const cases = 2 * ctx.scale;
  const total = emptyTally();
  let worst = 0;
  let survived = true;
  for (let i = 0; i < cases; i++) {
    const repo = freshRepo(ctx);
    // Compiles take 400 ms each, so the kill lands in a compile (holding its lock) or a write.
    const slow = spawnWorker({ ...repo, env: { XLASERVE_TEST_COMPILE_DELAY_MS: "400" } });
    await slow.waitLog("engine selected", 30_000).catch(() => {});
    await sleep(100 + ctx.random() * 900);
    slow.proc.kill("SIGKILL");
    await slow.proc.exited;
    const t0 = Date.now();
    const next = spawnWorker(repo);
    try {
      await next.ready;
      worst = Math.max(worst, Date.now() - t0);
      addTally(total, await checkAnswers(ctx, next, 0));
      survived &&= total.last === 0;
    } catch {
      survived = false;
    }
    await next.stop();
  }
  return row(
    "kill -9 during compile and cache write",
    cases,
    survived,
    total,
    worst,
    "restart to ready; the dead worker's compile locks taken over",
  );
}

/** A warm repository: its programs compiled and stored once. */
async function warmRepo(ctx: SuiteContext) {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker(repo));
  await w.stop();
  return repo;
}

function cacheFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

function flipBytes(path: string, random: () => number, count: number): void {
  const size = statSync(path).size;
  if (size === 0) return;
  const fd = openSync(path, "r+");
  try {
    for (let i = 0; i < count; i++) {
      const at = Math.floor(random() * size);
      writeSync(fd, new Uint8Array([Math.floor(random() * 256)]), 0, 1, at);
    }
  } finally {
    closeSync(fd);
  }
}

/** Random bytes of the program cache's entry files (and mlir_hashes.json) overwritten between starts. */
export async function cacheCorruption(ctx: SuiteContext): Promise<FaultRow> {
  const repo = await warmRepo(ctx);
  const cases = 3 * ctx.scale;
  const total = emptyTally();
  let worst = 0;
  let survived = true;
  for (let i = 0; i < cases; i++) {
    const files = cacheFiles(join(repo.mlp, ".cache"));
    for (const f of files) if (ctx.random() < 0.7) flipBytes(f, ctx.random, 1 + Math.floor(ctx.random() * 8));
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
  const total = emptyTally();
  let worst = 0;
  let survived = true;
  for (let i = 0; i < cases; i++) {
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
  return row(
    "damaged pages of the cache index",
    cases,
    survived,
    total,
    worst,
    "restart to ready; index set aside and rebuilt",
  );
}

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

/** Hostile bodies: 100k-deep nesting, a NaN-filled invalid body, clients hanging up mid-body. */
export async function hostileBodies(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker(repo));
  const clients = runClients(() => w.url, ctx.body, ctx.expected, 2);
  const cases = 3 * ctx.scale;
  const port = Number(new URL(w.url).port);
  const statuses: number[] = [];
  let worstStall = 0;
  for (let i = 0; i < cases; i++) {
    const kind = i % 3;
    const t0 = Date.now();
    if (kind === 0) {
      const body = `{"inputs":[{"name":"features","shape":[1,64],"datatype":"FP32","data":${"[".repeat(100_000)}${"]".repeat(100_000)}}]}`;
      statuses.push((await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body })).status);
    } else if (kind === 1) {
      const body = `{"inputs":[{"name":"features","shape":[1,64],"datatype":"FP32","data":[${"NaN,".repeat(1_000_000)}x]}]}`;
      statuses.push((await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body })).status);
    } else {
      const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
      socket.write('POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"inputs":[');
      await sleep(50);
      socket.end();
    }
    worstStall = Math.max(worstStall, Date.now() - t0);
  }
  await sleep(100);
  const metrics = await (await fetch(`${w.url}/metrics`)).text();
  const tally = await clients.stop();
  const survived = w.alive() && tally.last === 0;
  await w.stop();
  const serverErrors = /worker_requests_total\{[^}]*status="5\d\d"/.test(metrics);
  return row(
    "hostile request bodies",
    cases,
    survived && !serverErrors && statuses.every((s) => s === 400),
    tally,
    worstStall,
    `statuses ${[...new Set(statuses)].join(",")}; ${serverErrors ? "5xx counted" : "no 5xx counted"}`,
  );
}

/** A model folder that is a symbolic link out of the repository. */
export async function linkOutside(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const outside = join(ctx.root, `outside-${repoCount++}`, "evil");
  copyBundle("mlp", outside);
  writeFileSync(
    join(outside, "manifest.yaml"),
    readFileSync(join(outside, "manifest.yaml"), "utf8").replace(/^name: .*$/m, "name: evil"),
  );
  symlinkSync(outside, join(repo.repository, "evil"));
  const w = await started(spawnWorker(repo));
  const index = (await (await fetch(`${w.url}/v2/repository/index`, { method: "POST" })).json()) as Array<{
    name: string;
    state: string;
    reason: string;
  }>;
  const tally = await checkAnswers(ctx, w, 0);
  const survived = w.alive();
  await w.stop();
  const evil = index.find((e) => e.name === "evil");
  const refused = evil?.state === "UNAVAILABLE" && evil.reason.includes("outside the model repository");
  const wrote = existsSync(join(outside, ".cache"));
  return row(
    "model folder linked outside the repository",
    1,
    survived && refused && !wrote && tally.last === 0,
    tally,
    null,
    `${refused ? "refused" : "served"}; ${wrote ? ".cache written outside" : "nothing written outside"}`,
  );
}

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
  const mount = join(ctx.root, `small-disk-${repoCount++}`);
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

export const FAULT_CLASSES = {
  truncateDuringReload,
  halfWritten,
  reloadStorm,
  killDuringCompile,
  cacheCorruption,
  indexCorruption,
  twoWorkers,
  hostileBodies,
  linkOutside,
  diskFull,
} as const;

/** The table as Markdown. */
export function formatTable(rows: readonly FaultRow[]): string {
  const lines = [
    "| fault class | cases | worker survived | wrong answers | time to recover (ms) | notes |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.fault} | ${r.cases} | ${r.survived ? "yes" : "NO"} | ${r.wrongAnswers} | ${r.recoverMs ?? "-"} | ${r.notes} |`,
    );
  }
  return lines.join("\n");
}

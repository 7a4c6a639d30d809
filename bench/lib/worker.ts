/**
 * Starting the real worker CLI (apps/worker/src/main.ts serve) as a fresh process and timing it:
 * spawn -> /v2/health/ready answers 200. The worker's JSON log lines (stderr) are collected so
 * benchmarks can read "model loaded" (per-program cache outcome and ms), "memory" and
 * "weight budget resolved".
 */
import { resolve } from "node:path";
import { type RunningProcess, describeFailure, startProcess } from "./proc.ts";

export const WORKER_MAIN = resolve(import.meta.dir, "..", "..", "apps", "worker", "src", "main.ts");

export interface WorkerStartOptions {
  readonly repository: string;
  readonly stateDir: string;
  readonly engine: "pjrt" | "reactant" | "auto";
  readonly plugin?: string;
  readonly watch?: boolean;
  readonly pollIntervalMs?: number;
  readonly extraArgs?: readonly string[];
  readonly env?: Record<string, string | undefined>;
  readonly timeoutMs?: number;
  readonly echo?: boolean;
}

export interface LogRecord {
  readonly msg: string;
  readonly [k: string]: unknown;
}

export interface StartedWorkerProcess {
  readonly url: string;
  /** Spawn -> first 200 from /v2/health/ready. */
  readonly readyMs: number;
  readonly logs: LogRecord[];
  readonly proc: RunningProcess;
  /** Resolves with the next log record that matches (or rejects after timeoutMs). */
  waitForLog(match: (r: LogRecord) => boolean, timeoutMs: number): Promise<LogRecord>;
  stop(): Promise<void>;
}

export async function startWorkerProcess(o: WorkerStartOptions): Promise<StartedWorkerProcess> {
  const args = [
    process.execPath,
    WORKER_MAIN,
    "serve",
    "--engine",
    o.engine,
    "--repository",
    o.repository,
    "--state-dir",
    o.stateDir,
    "--port",
    "0",
    "--log-format",
    "json",
    ...(o.plugin ? ["--plugin", o.plugin] : []),
    ...(o.watch ? ["--poll-interval-ms", String(o.pollIntervalMs ?? 200)] : ["--no-watch"]),
    ...(o.extraArgs ?? []),
  ];
  const logs: LogRecord[] = [];
  const waiters: { match: (r: LogRecord) => boolean; resolve: (r: LogRecord) => void }[] = [];
  let url: string | null = null;
  const proc = startProcess(args, {
    env: { ...(o.plugin ? { XLASERVE_PJRT_PLUGIN: o.plugin } : {}), ...(o.env ?? {}) },
    timeoutMs: o.timeoutMs ?? 600_000,
    onLine: (line, stream) => {
      if (o.echo) process.stderr.write(`    [worker ${stream}] ${line}\n`);
      const t = line.trim();
      if (stream === "stdout") {
        const m = /listening on (\S+)/.exec(t);
        if (m && !url) url = m[1] as string;
        return;
      }
      if (!t.startsWith("{")) return;
      let rec: LogRecord;
      try {
        rec = JSON.parse(t) as LogRecord;
      } catch {
        return;
      }
      logs.push(rec);
      if (rec.msg === "listening" && typeof rec.url === "string" && !url) url = rec.url;
      for (let i = waiters.length - 1; i >= 0; i--) {
        const w = waiters[i] as (typeof waiters)[number];
        if (w.match(rec)) {
          waiters.splice(i, 1);
          w.resolve(rec);
        }
      }
    },
  });
  let exited = false;
  void proc.done.then(() => {
    exited = true;
  });
  const deadline = performance.now() + (o.timeoutMs ?? 600_000);
  let readyMs: number | null = null;
  while (performance.now() < deadline && !exited) {
    if (url) {
      try {
        const r = await fetch(`${url}/v2/health/ready`);
        if (r.status === 200) {
          readyMs = performance.now() - proc.t0;
          break;
        }
      } catch {
        // not listening yet
      }
    }
    await Bun.sleep(url ? 5 : 10);
  }
  if (readyMs === null || !url) {
    proc.kill("SIGKILL");
    const r = await proc.done;
    throw new Error(`worker never became ready: ${describeFailure(r)}`);
  }
  const finalUrl: string = url;
  return {
    url: finalUrl,
    readyMs,
    logs,
    proc,
    waitForLog(match, timeoutMs) {
      const found = logs.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolveLog, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching worker log line within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (r) => {
            clearTimeout(timer);
            resolveLog(r);
          },
        });
      });
    },
    async stop() {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await proc.done;
      clearTimeout(timer);
    },
  };
}

/** Per-program figures from the worker's "model loaded" lines: [{model, file, cache, ms}]. */
export function programLoads(logs: readonly LogRecord[]): { model: string; file: string; cache: string; ms: number }[] {
  const out: { model: string; file: string; cache: string; ms: number }[] = [];
  for (const r of logs) {
    if (r.msg !== "model loaded" && r.msg !== "model reloaded") continue;
    const programs = (r.programs as { file: string; cache: string; ms: number }[] | undefined) ?? [];
    for (const p of programs) out.push({ model: String(r.model), file: p.file, cache: p.cache, ms: p.ms });
  }
  return out;
}

/** POST /v2/repository/index: every bundle with its state (READY, UNAVAILABLE, ...) and reason. */
export async function repositoryIndex(url: string): Promise<{ name: string; state: string; reason?: string }[]> {
  const r = await fetch(`${url}/v2/repository/index`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  if (r.status !== 200) throw new Error(`repository index answered ${r.status}`);
  return (await r.json()) as { name: string; state: string; reason?: string }[];
}

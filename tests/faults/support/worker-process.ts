import type { Subprocess } from "bun";
import { resolve } from "node:path";

const MAIN = resolve(import.meta.dir, "../../../apps/worker/src/main.ts");

/** A real worker process (the CLI's serve), its JSON log lines and its URL once it listens. */
export interface WorkerProcess {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly logs: Array<Record<string, unknown>>;
  /** Resolves with the URL once the worker listens; rejects if it exits first. */
  readonly ready: Promise<string>;
  url: string;
  alive(): boolean;
  /** Waits for a log line with this message (from `since` on), or throws after `timeoutMs`. */
  waitLog(msg: string, timeoutMs?: number, since?: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<number | null>;
}

export interface WorkerSpawn {
  readonly repository: string;
  readonly stateDir: string;
  readonly pollMs?: number;
  readonly env?: Record<string, string | undefined>;
  readonly args?: readonly string[];
}

export function spawnWorker(o: WorkerSpawn): WorkerProcess {
  const proc = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "serve",
      "--port",
      "0",
      "--repository",
      o.repository,
      "--state-dir",
      o.stateDir,
      "--engine",
      "reactant",
      "--poll-interval-ms",
      String(o.pollMs ?? 50),
      "--log-level",
      "info",
      ...(o.args ?? []),
    ],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, XLASERVE_PORT: undefined, ...o.env },
    },
  );
  const logs: Array<Record<string, unknown>> = [];
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of stream) {
      rest += decoder.decode(chunk, { stream: true });
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.startsWith("{")) continue;
        try {
          logs.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          /* a human line */
        }
      }
    }
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const waitLog = async (msg: string, timeoutMs = 30_000, since = 0) => {
    const t0 = Date.now();
    for (;;) {
      const found = logs.slice(since).find((l) => l.msg === msg);
      if (found) return found;
      if (exited) throw new Error(`the worker exited (${proc.exitCode ?? proc.signalCode}) before logging "${msg}"`);
      if (Date.now() - t0 > timeoutMs) throw new Error(`no "${msg}" log line within ${timeoutMs} ms`);
      await Bun.sleep(10);
    }
  };
  const worker: WorkerProcess = {
    proc,
    logs,
    url: "",
    ready: waitLog("listening", 60_000).then((l) => {
      worker.url = String(l.url);
      return worker.url;
    }),
    alive: () => !exited,
    waitLog,
    stop: async () => {
      if (exited) return proc.exitCode;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      await proc.exited;
      clearTimeout(timer);
      return proc.exitCode;
    },
  };
  // A worker a case kills before it listens rejects `ready`; only callers that wait for it care.
  worker.ready.catch(() => {});
  return worker;
}

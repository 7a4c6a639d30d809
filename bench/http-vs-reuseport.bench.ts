/**
 * N worker processes on one port through SO_REUSEPORT against one process, side by side: the same
 * MLP (examples/models/mlp), the same JSON request, the same load generator and the same cores.
 * Two servers, started through the real CLI and alive together, taking turns under load (each
 * round loads each in turn):
 *
 *   anchor     one `xlaserve serve` process (one HTTP thread)
 *   reuseport  `xlaserve node --cpu --workers N` (N serve processes on one port)
 *
 * Throughput and p50 / p99 for each, and the ratio reuseport / anchor. This bench once also ran
 * `serve --http-threads N` (extra HTTP threads with replicas of the MLP); its results of
 * 2026-12-02 (bench/results/http-vs-reuseport-{2,4,8}-2026-12-02T01-2*.json) are why those threads
 * were removed: they did not beat N processes and had the worse p99 at every N. Where the
 * machine has at least 2N cores, the servers are pinned (taskset) to cores 0..N-1 and the load
 * generator to the next N; otherwise nothing is pinned, and the result says so.
 *
 *   bun bench/http-vs-reuseport.bench.ts [--processes N] [--connections 64] [--duration 5]
 *     [--rounds 3] [--generator wrk|bun] [--results-dir DIR]
 */
import { availableParallelism, loadavg } from "node:os";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { intFlag, parseFlags } from "./lib/args.ts";
import { type HttpLoadResult, MLP_REQUEST_BODY, defaultGenerator, httpLoad } from "./lib/http-load.ts";
import { type RunningProcess, startProcess } from "./lib/proc.ts";
import { BenchResult, resultsDir } from "./lib/results.ts";
import { WORKER_MAIN } from "./lib/worker.ts";

const USAGE = `bun bench/http-vs-reuseport.bench.ts [--processes N] [--connections 64] [--duration 5] [--rounds 3]
  [--generator wrk|bun] [--results-dir DIR]`;
const { values } = parseFlags(USAGE, {
  processes: { type: "string", default: "2" },
  connections: { type: "string", default: "64" },
  duration: { type: "string", default: "5" },
  rounds: { type: "string", default: "3" },
  generator: { type: "string" },
  "results-dir": { type: "string" },
});
const n = Math.max(2, intFlag(values.processes, 2, "processes"));
const connections = intFlag(values.connections, 64, "connections");
const seconds = intFlag(values.duration, 5, "duration");
const rounds = intFlag(values.rounds, 3, "rounds");
const generator = values.generator === "wrk" || values.generator === "bun" ? values.generator : defaultGenerator();
const cores = availableParallelism();
const pinned = cores >= 2 * n;
const serverCpus = pinned ? `0-${n - 1}` : undefined;
const loadCpus = pinned ? `${n}-${2 * n - 1}` : undefined;

const result = new BenchResult(`http-vs-reuseport-${n}`, [
  "bun",
  "bench/http-vs-reuseport.bench.ts",
  ...process.argv.slice(2),
]);
result.dir = resultsDir(typeof values["results-dir"] === "string" ? values["results-dir"] : undefined);
result.figure("processes", n);
result.figure("load", {
  generator,
  connections,
  seconds,
  rounds,
  loadAverageAtStart: loadavg().map((x) => +x.toFixed(2)),
});
result.figure("cores", { machine: cores, servers: serverCpus ?? "unpinned", loadGenerator: loadCpus ?? "unpinned" });
if (!pinned) result.note(`${cores} cores: fewer than 2 x ${n}, so servers and load generator share unpinned cores`);

const body = MLP_REQUEST_BODY;

/** A free TCP port (bound and let go: the servers bind it with SO_REUSEPORT themselves). */
function freePort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = s.port as number;
  s.stop(true);
  return port;
}

interface Server {
  readonly label: string;
  readonly url: string;
  readonly proc: RunningProcess;
}

const root = mkdtempSync(join(tmpdir(), "xlaserve-reuseport-"));
const repository = join(root, "models");
cpSync(resolve(import.meta.dir, "../examples/models/mlp"), join(repository, "mlp"), {
  recursive: true,
  filter: (src) => !src.includes(".cache"),
});

async function start(label: string, command: string[]): Promise<Server> {
  const port = freePort();
  const pin = serverCpus ? ["taskset", "-c", serverCpus] : [];
  const args = [...pin, process.execPath, WORKER_MAIN, ...command, "--port", String(port), "--grpc-port", "0"];
  const common = ["--repository", repository, "--state-dir", join(root, `state-${label}`), "--no-watch"];
  const proc = startProcess([...args, ...common, "--engine", "reactant", "--log-level", "warn"], {
    timeoutMs: 600_000,
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 120_000;
  for (;;) {
    const ok = await fetch(`${url}/v2/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    // node's workers come up one by one: ready once every one answers (a few probes in a row).
    if (ok && (await allReady(url))) break;
    if (performance.now() > deadline) throw new Error(`${label}: not ready after 120 s`);
    await Bun.sleep(200);
  }
  return { label, url, proc };
}

async function allReady(url: string): Promise<boolean> {
  for (let i = 0; i < 8; i++) {
    const r = await fetch(`${url}/v2/models/mlp/ready`).then(
      (x) => x.status,
      () => 0,
    );
    if (r !== 200) return false;
  }
  return true;
}

function load(s: Server, secs: number): Promise<HttpLoadResult> {
  return httpLoad(
    { url: `${s.url}/v2/models/mlp/infer`, body, connections, seconds: secs },
    { kind: generator, wrkThreads: Math.max(2, n), children: Math.max(2, Math.min(n, 4)), cpus: loadCpus },
  );
}

const servers: Server[] = [];
const figures: Record<string, HttpLoadResult[]> = {};
try {
  servers.push(await start("anchor", ["serve"]));
  servers.push(await start("reuseport", ["node", "--cpu", "--workers", String(n)]));
  // Warm-up: past the requests after which the MLP runs inline.
  for (const s of servers) await load(s, 3);
  for (let r = 0; r < rounds; r++) {
    for (const s of servers) {
      const f = await load(s, seconds);
      const list = figures[s.label] ?? [];
      list.push(f);
      figures[s.label] = list;
      console.log(
        `  round ${r + 1} ${s.label}: ${Math.round(f.rps)} req/s, p50 ${f.p50Ms.toFixed(3)} ms, p99 ${f.p99Ms.toFixed(3)} ms, errors ${f.errors}`,
      );
    }
  }
} finally {
  for (const s of servers) {
    s.proc.kill("SIGTERM");
    await s.proc.done;
  }
  rmSync(root, { recursive: true, force: true });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor(s.length / 2)] as number) : null;
};
const summary: Record<string, { rps: number | null; p50Ms: number | null; p99Ms: number | null; errors: number }> = {};
for (const [label, list] of Object.entries(figures)) {
  summary[label] = {
    rps: median(list.map((f) => Math.round(f.rps))),
    p50Ms: median(list.map((f) => Math.round(f.p50Ms * 1000) / 1000)),
    p99Ms: median(list.map((f) => Math.round(f.p99Ms * 1000) / 1000)),
    errors: list.reduce((a, f) => a + f.errors, 0),
  };
  result.figure(label, { ...summary[label], rounds: list });
}
const rps = (label: string) => summary[label]?.rps ?? null;
result.ratio(
  "reuseportOverAnchor",
  { label: `node --workers ${n}, req/s`, value: rps("reuseport") },
  { label: "one process, req/s", value: rps("anchor") },
);
result.ratio(
  "reuseportP99OverAnchorP99",
  { label: `node --workers ${n}, p99 ms`, value: summary.reuseport?.p99Ms ?? null },
  { label: "one process, p99 ms", value: summary.anchor?.p99Ms ?? null },
);
result.write();

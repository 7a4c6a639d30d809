/**
 * HTTP throughput of the MLP example's infer route (JSON body) against a bare Bun.serve endpoint
 * that reads a same-size request and answers the very same response bytes, in one run: the ratio
 * is what the worker's HTTP layer and codec (plus the model) cost over Bun itself.
 *
 *   bun bench/http.bench.ts [--target worker|registry|http-only] [--dynamic-batching] [--duration 8] [--connections 16]
 *                           [--rounds 2] [--generator wrk|bun] [--engine auto|reactant|pjrt]
 *                           [--wrk-threads 1] [--results-dir DIR]
 *
 * target worker (default): apps/worker's startWorker over a temp copy of examples/models/mlp,
 * engine chosen as the worker does (--engine, default auto: PJRT where a plugin loads, else the
 * CPU engine). target registry: the server package's test registry, whose "mlp" has the same
 * specs and computes a 64-256-256-10 MLP in TypeScript (for when the worker is unavailable).
 * target http-only: the same, but the stand-in answers precomputed outputs of the same size, so
 * the figure is the HTTP layer and codec alone.
 * The load generator runs in its own process: wrk (Debian package) when installed, else N
 * keep-alive fetch loops in a Bun subprocess (bench/lib/http-load.ts).
 * Writes bench/results/http-<date>.json (http-<target>-<date>.json for the stand-in targets) in
 * the shape of bench/lib/results.ts.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type HttpLoadSpec as LoadSpec, MLP_REQUEST_BODY, defaultGenerator, httpLoad } from "./lib/http-load.ts";
import type { LoadResult } from "./lib/load-result.ts";
import { BenchResult, resultsDir } from "./lib/results.ts";

const { values: args } = parseArgs({
  options: {
    target: { type: "string", default: "worker" },
    duration: { type: "string", default: "8" },
    connections: { type: "string", default: "16" },
    rounds: { type: "string", default: "2" },
    generator: { type: "string" },
    // Dynamic batching is off by default in the worker (a coalesced request runs on a larger
    // program whose bits can differ); this measures it on.
    "dynamic-batching": { type: "boolean", default: false },
    engine: { type: "string" },
    // wrk's own threads: one wrk thread tops out near 100k req/s.
    "wrk-threads": { type: "string", default: "1" },
    "results-dir": { type: "string" },
  },
});

const benchDir = import.meta.dir;
// The command as typed from the repository root (argv holds this machine's absolute paths).
const result = new BenchResult(
  (args.target === "worker" ? (args["dynamic-batching"] ? "http-dynamic-batching" : "http") : `http-${args.target}`) +
    (args.engine ? `-${args.engine}` : ""),
  ["bun", "bench/http.bench.ts", ...process.argv.slice(2)],
);
result.dir = resultsDir(args["results-dir"]);
// Other work on the machine skews requests/s; the load average at the start is kept with the figures.
const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
const duration = Number(args.duration);
const connections = Number(args.connections);
const rounds = Number(args.rounds);
const generator = args.generator === "wrk" || args.generator === "bun" ? args.generator : defaultGenerator();
const wrkThreads = Number(args["wrk-threads"]);

const requestBody = MLP_REQUEST_BODY;

const target = await startTarget(args.target as string);
const inferUrl = `${target.url}/v2/models/mlp/infer`;
const probe = await fetch(inferUrl, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: requestBody,
});
const responseText = await probe.text();
if (probe.status !== 200) throw new Error(`the MLP infer answered ${probe.status}: ${responseText}`);

// The baseline: Bun.serve reading the request body and answering the same bytes.
const bare = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    await request.text();
    return new Response(responseText, { headers: { "content-type": "application/json" } });
  },
});
const bareUrl = `http://127.0.0.1:${bare.port}/v2/models/mlp/infer`;

const figures: { bare: LoadResult[]; xlaserve: LoadResult[] } = { bare: [], xlaserve: [] };
try {
  for (const url of [bareUrl, inferUrl]) await runLoad({ url, body: requestBody, connections, seconds: 2 }); // warm-up
  for (let round = 0; round < rounds; round++) {
    figures.bare.push(await runLoad({ url: bareUrl, body: requestBody, connections, seconds: duration }));
    figures.xlaserve.push(await runLoad({ url: inferUrl, body: requestBody, connections, seconds: duration }));
  }
} finally {
  bare.stop(true);
  await target.stop();
}

const summary = (list: LoadResult[]) => ({
  rps: round1(mean(list.map((r) => r.rps))),
  p50Ms: round3(mean(list.map((r) => r.p50Ms))),
  p99Ms: round3(mean(list.map((r) => r.p99Ms))),
  serverCpuUsPerRequest: round3(mean(list.map((r) => r.serverCpuUsPerRequest ?? 0))),
  errors: list.reduce((n, r) => n + r.errors, 0),
  rounds: list,
});
const bareSummary = summary(figures.bare);
const xlaSummary = summary(figures.xlaserve);
result.figure("target", target.kind);
result.figure("dynamicBatching", args["dynamic-batching"] === true);
// Inline runs of short programs on the HTTP thread (apps/worker/src/inline/inline-runs.ts): the env override, if any.
result.figure("inlineMaxUs", process.env.XLASERVE_INLINE_MAX_US ?? "default");
result.figure("model", "mlp");
result.figure("request", { bytes: requestBody.length, shape: [1, 64], datatype: "FP32" });
result.figure("response", { bytes: responseText.length });
result.figure("load", {
  generator,
  connections,
  ...(generator === "wrk" ? { wrkThreads } : {}),
  durationSeconds: duration,
  rounds,
  loadAverageAtStart: loadAtStart,
});
result.figure("bare", bareSummary);
result.figure("xlaserve", xlaSummary);
console.log(`target ${target.kind}, generator ${generator}, ${connections} connections, ${rounds} x ${duration} s`);
console.log(`bare Bun.serve : ${bareSummary.rps} req/s  p50 ${bareSummary.p50Ms} ms  p99 ${bareSummary.p99Ms} ms`);
console.log(`xlaserve mlp   : ${xlaSummary.rps} req/s  p50 ${xlaSummary.p50Ms} ms  p99 ${xlaSummary.p99Ms} ms`);
result.ratio(
  "requests_per_second",
  { label: `xlaserve ${target.kind} req/s`, value: xlaSummary.rps },
  { label: "bare Bun.serve req/s", value: bareSummary.rps },
  ">= 0.6",
);
// The throughput ratio when the server is CPU-bound; steadier than req/s on a shared machine.
result.ratio(
  "server_cpu_per_request",
  { label: "bare Bun.serve CPU us/request", value: bareSummary.serverCpuUsPerRequest },
  { label: `xlaserve ${target.kind} CPU us/request`, value: xlaSummary.serverCpuUsPerRequest },
);
if (xlaSummary.errors + bareSummary.errors > 0) {
  result.note(`non-200 answers: bare ${bareSummary.errors}, xlaserve ${xlaSummary.errors}`);
}
result.write();

// ---------------------------------------------------------------------------------------------

interface Target {
  url: string;
  kind: string;
  stop(): Promise<void>;
}

async function startTarget(kind: string): Promise<Target> {
  if (kind === "registry" || kind === "http-only") {
    const { createLogger } = await import("@xlaserve/core");
    const server = await import("@xlaserve/server");
    const { TestRegistry } = await import("../packages/server/test/support/test-registry.ts");
    const registry = new TestRegistry();
    if (kind === "http-only") {
      const { FunctionModel } = await import("../packages/server/test/support/test-models.ts");
      const mlp = registry.models.get("mlp") as InstanceType<typeof FunctionModel>;
      const x = { dtype: "f32" as const, shape: [1, 64], data: new Float32Array(64).fill(0.25) };
      const fixed = await mlp.infer({ inputs: new Map([["features", x]]) });
      registry.models.set("mlp", new FunctionModel("mlp", mlp.inputs, mlp.outputs, () => fixed, [1, 8]));
    }
    const app = server.createServerApp({
      registry,
      logger: createLogger({ level: "warn" }),
      metrics: new server.Metrics(),
      config: { maxBodyBytes: 64 * 1024 * 1024 },
    });
    const running = server.startServer(app, { host: "127.0.0.1", port: 0 });
    return { url: running.url, kind, stop: () => running.stop(true) };
  }
  const root = mkdtempSync(join(tmpdir(), "xlaserve-http-bench-"));
  cpSync(resolve(benchDir, "../examples/models/mlp"), join(root, "models", "mlp"), {
    recursive: true,
    filter: (src) => !src.includes(".cache"),
  });
  const { startWorker } = await import("../apps/worker/src/index.ts");
  const { createLogger } = await import("@xlaserve/core");
  const worker = await startWorker({
    repository: join(root, "models"),
    host: "127.0.0.1",
    port: 0,
    env: {},
    // error, not warn: wrk drops its connections at the end of a run, and the requests still
    // queued then are logged as aborted, which is expected here.
    logger: createLogger({ level: "error" }),
    config: {
      cache: { stateDir: join(root, "state") },
      repository: { dynamic: false },
      concurrency: { dynamicBatching: args["dynamic-batching"] === true },
      ...(args.engine ? { engine: args.engine as "auto" | "reactant" | "pjrt" } : {}),
    },
  });
  return {
    url: worker.url,
    kind: `worker (${worker.engine.engine} engine)`,
    stop: async () => {
      await worker.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * One load run. Besides requests/s it records this process's CPU time per request: the servers
 * live here and the generator does not, so that figure holds even when other work shares the
 * machine and makes the requests/s noisy.
 */
async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const before = process.cpuUsage();
  const result = await httpLoad(spec, { kind: generator, wrkThreads });
  const cpu = process.cpuUsage(before);
  return { ...result, serverCpuUsPerRequest: round3((cpu.user + cpu.system) / Math.max(1, result.requests)) };
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}
function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

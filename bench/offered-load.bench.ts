/**
 * Offered-load curves through the device scheduler: the real worker (the CLI, its own process)
 * under open-loop load at set request rates, batch-1 requests, with coalescing off and on, for
 * the MLP and a ResNet-class model (locally the example CNN with its residual block; with
 * --resnet, a ResNet-50 bundle). Each point sends requests on a fixed schedule for --duration-s
 * and times each from its scheduled send (so a stalled server is not hidden by a stalled
 * client): achieved throughput, p50 and p99. Saturation throughput is measured closed-loop
 * (--clients at once) in the same run, and the ratio coalescing on / off at saturation is the
 * headline (goal >= 3x).
 *
 * What bounds that ratio is measured beside it: at each saturation run, the rows each execution
 * carried, one execution's own time, the share of the run the engine was busy, the worker's and
 * the load generator's CPU time per request (the statistics extension and /proc); the engine's
 * ceiling for coalescing (in this process, no worker: an execution at the largest compiled size
 * against that many at batch 1, so N x t(1) / t(N), bench/lib/engine-ceiling.ts); and what the
 * load generator can send at all
 * (the same requests to a bare Bun.serve answering the same bytes, in a process of its own).
 *
 * Fairness: the light model (MLP) at --light-rate alone, then with the other model flooding at
 * --flood-factor times that rate (default 10), under fifo and under fair; the ratio is the light
 * model's p99 with the flood over its solo p99 (goal <= 2x under fair). --flood-queue-depth and
 * --flood-max-batch set the flooding model's scheduler.models entry (queueDepth: how many of its
 * requests wait before the rest are refused with 429 before their bodies are read; maxBatchSize:
 * the rows of one of its executions, which bounds how long a light request can wait behind one
 * on a device that cannot be preempted), through a configuration file given to the worker;
 * --max-in-flight sets the device's executions in flight for those runs (scheduler.maxInFlight).
 * --image runs a synthetic bundle of ResNet-50's input (f32[1,224,224,3], 602 KB a request) whose
 * compute is a slice (tests/e2e/image-bundle.ts) as the ResNet-class model: what is measured is
 * then the host's path for such a request.
 *
 *   bun bench/offered-load.bench.ts [--engine reactant|pjrt] [--plugin P] [--models DIR]
 *     [--resnet DIR] [--duration-s 3] [--clients 32] [--light-rate 50] [--only mlp,resnet,fairness]
 *     [--results-dir DIR]
 * --only runs some parts: mlp, resnet (the ResNet-class model's curves) and fairness.
 * --xla-models DIR: where the JAX exports of the same programs are (jax_exported.cpu.b{N}.bin,
 * tools/export_jax_bundle.py --jax-exported): XLA CPU's own ceiling for coalescing on each model,
 * N x t(1) / t(N) through bench/anchors/jax_anchor.py, is measured beside the engine's, so the
 * result says whether any scheduler could reach 3x on that program on a CPU (skipped, saying
 * why, where python3 cannot import jax or the exports are missing).
 * --wire binary sends the inputs and asks for the outputs through the binary tensor data
 * extension (Inference-Header-Content-Length) instead of JSON numbers: for image inputs, JSON
 * decoding on the HTTP thread otherwise costs more per request than the device's run.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { intFlag, parseFlags } from "./lib/args.ts";
import { writeImageBundle } from "../tests/e2e/image-bundle.ts";
import { BenchResult } from "./lib/results.ts";
import { type LoopPoint, inferSender, openLoop as runOpenLoop } from "./lib/open-loop.ts";
import { type StartedWorkerProcess, startWorkerProcess } from "./lib/worker.ts";
import {
  processCpuSeconds,
  round3,
  statsDelta,
  statsSnapshot,
  threadCpuSeconds,
  threadCpuUsPerRequest,
} from "./lib/worker-figures.ts";
import { type EngineCeiling, createBenchBackend, engineCeiling } from "./lib/engine-ceiling.ts";
import { type XlaCpuCeiling, xlaCpuCeiling } from "./lib/xla-cpu-ceiling.ts";

const USAGE = `bun bench/offered-load.bench.ts [--engine reactant|pjrt] [--plugin P] [--models DIR] [--resnet DIR]
  [--duration-s 3] [--clients 32] [--light-rate 50] [--only mlp,resnet,fairness] [--wire json|binary]
  [--xla-models DIR] [--results-dir DIR] [--image] [--flood-factor 10] [--flood-queue-depth N]
  [--flood-max-batch N] [--max-in-flight N]`;
const { values } = parseFlags(USAGE, {
  engine: { type: "string", default: "reactant" },
  plugin: { type: "string" },
  models: { type: "string" },
  resnet: { type: "string" },
  "duration-s": { type: "string", default: "3" },
  clients: { type: "string", default: "32" },
  "light-rate": { type: "string", default: "50" },
  only: { type: "string" },
  wire: { type: "string", default: "json" },
  "xla-models": { type: "string" },
  "results-dir": { type: "string" },
  image: { type: "boolean" },
  "flood-factor": { type: "string", default: "10" },
  "flood-queue-depth": { type: "string" },
  "max-in-flight": { type: "string" },
  "flood-max-batch": { type: "string" },
});
const engine = values.engine === "pjrt" ? "pjrt" : "reactant";
if (values.wire !== "json" && values.wire !== "binary") throw new Error(`--wire: json or binary, not ${values.wire}`);
const binaryWire = values.wire === "binary";
const plugin = typeof values.plugin === "string" ? values.plugin : undefined;
const durationMs = Number(values["duration-s"]) * 1000;
const clients = intFlag(values.clients, 32, "clients");
const lightRate = intFlag(values["light-rate"], 50, "light-rate");
const floodFactor = intFlag(values["flood-factor"], 10, "flood-factor");
const floodQueueDepth =
  values["flood-queue-depth"] === undefined ? undefined : intFlag(values["flood-queue-depth"], 0, "flood-queue-depth");
const floodMaxBatch =
  values["flood-max-batch"] === undefined ? undefined : intFlag(values["flood-max-batch"], 0, "flood-max-batch");
const maxInFlight =
  values["max-in-flight"] === undefined ? undefined : intFlag(values["max-in-flight"], 0, "max-in-flight");
const examples = resolve(
  typeof values.models === "string" ? values.models : resolve(import.meta.dir, "../examples/models"),
);

const result = new BenchResult(`offered-load-${engine}`);
if (typeof values["results-dir"] === "string") result.dir = values["results-dir"];
result.figure("engine", engine);
result.figure("durationMs", durationMs);
result.figure("closedLoopClients", clients);
result.figure("wire", binaryWire ? "binary" : "json");
result.figure("flood", {
  factor: floodFactor,
  queueDepth: floodQueueDepth ?? null,
  maxBatchSize: floodMaxBatch ?? null,
  maxInFlight: maxInFlight ?? null,
});

const xlaModels = typeof values["xla-models"] === "string" ? resolve(values["xla-models"]) : null;

/** A model's request: one row of the first input, as JSON (the same bytes every time). */
interface Target {
  readonly name: string;
  readonly dir: string;
  readonly body: RequestBody;
  /** One request carrying `largest` rows. */
  readonly bodyLargest: RequestBody;
  /** The largest compiled batch size. */
  readonly largest: number;
}

async function targetOf(dir: string, name: string): Promise<Target> {
  const { loadBundle } = await import("@xlaserve/core/bundle/load.ts");
  const bundle = await loadBundle(dir);
  const spec = bundle.manifest.executableInputs[0];
  if (!spec) throw new Error(`${name} has no inputs`);
  const largest = Math.max(...bundle.manifest.compiledBatchSizes);
  const bodyOf = (rows: number): RequestBody => {
    const shape = spec.dims.map((d) => (d.kind === "batch" ? rows : d.kind === "fixed" ? d.size : 1));
    const n = shape.reduce((a, b) => a * b, 1);
    const data = Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000);
    if (!binaryWire) return { bytes: JSON.stringify({ inputs: [{ name: spec.name, datatype: "FP32", shape, data }] }) };
    const header = new TextEncoder().encode(
      JSON.stringify({
        inputs: [{ name: spec.name, datatype: "FP32", shape, parameters: { binary_data_size: n * 4 } }],
        parameters: { binary_data_output: true },
      }),
    );
    const bytes = new Uint8Array(header.byteLength + n * 4);
    bytes.set(header);
    // The header's length is arbitrary: the floats start unaligned, so they are copied as bytes.
    bytes.set(new Uint8Array(Float32Array.from(data).buffer), header.byteLength);
    return {
      bytes,
      headers: {
        "inference-header-content-length": String(header.byteLength),
        "content-type": "application/octet-stream",
      },
    };
  };
  return { name, dir, body: bodyOf(1), bodyLargest: bodyOf(largest), largest };
}

/**
 * The run's repositories, one per set of bundles, copied once (a repository may not link outside
 * itself) and kept for the whole run, so later starts load their programs from its cache.
 */
const repositories = new Map<string, string>();
const scratch = mkdtempSync(join(tmpdir(), "xlaserve-offered-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));

function repository(targets: readonly Target[]): { path: string; state: string } {
  const key = targets.map((t) => t.name).join("+");
  let path = repositories.get(key);
  if (!path) {
    path = join(scratch, key, "models");
    mkdirSync(path, { recursive: true });
    for (const t of targets) {
      cpSync(t.dir, join(path, t.name), { recursive: true, filter: (src) => !src.includes(".cache") });
    }
    repositories.set(key, path);
  }
  return { path, state: join(scratch, "state") };
}

async function startWith(
  targets: readonly Target[],
  env: Record<string, string>,
  coalesce: boolean,
  config?: Record<string, unknown>,
) {
  const repo = repository(targets);
  const configArgs: string[] = [];
  if (config) {
    const file = join(scratch, `config-${configs++}.json`);
    writeFileSync(file, JSON.stringify(config));
    configArgs.push("--config", file);
  }
  const w = await startWorkerProcess({
    repository: repo.path,
    stateDir: repo.state,
    engine,
    plugin,
    extraArgs: [...(coalesce ? ["--dynamic-batching"] : []), ...configArgs],
    env: { XLASERVE_LOG_LEVEL: "warn", ...env },
  });
  return { w, stop: () => w.stop() };
}

let configs = 0;

/**
 * The fairness runs' scheduler section: the flooding model's entry from the --flood-* flags and the
 * device's executions in flight from --max-in-flight; undefined when none is set.
 */
function floodConfig(heavy: Target): Record<string, unknown> | undefined {
  const entry: Record<string, number> = {};
  if (floodQueueDepth !== undefined) entry.queueDepth = floodQueueDepth;
  if (floodMaxBatch !== undefined) entry.maxBatchSize = floodMaxBatch;
  const scheduler: Record<string, unknown> = {};
  if (Object.keys(entry).length > 0) scheduler.models = { [heavy.name]: entry };
  if (maxInFlight !== undefined) scheduler.maxInFlight = maxInFlight;
  return Object.keys(scheduler).length === 0 ? undefined : { scheduler };
}

/** An infer request's bytes and the headers they need. */
interface RequestBody {
  readonly bytes: string | Uint8Array<ArrayBuffer>;
  readonly headers?: Record<string, string>;
}

function post(w: { readonly url: string }, t: Target, body = t.body): Promise<number> {
  return inferSender(w.url, t.name, body)();
}

/** Closed loop: `n` requests always in flight for `ms`; completed requests per second. */
async function closedLoop(w: { readonly url: string }, t: Target, n = clients, ms = durationMs, body = t.body) {
  const end = performance.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (performance.now() < end) if ((await post(w, t, body)) === 200) done++;
    }),
  );
  return done / (ms / 1000);
}

/**
 * Saturation throughput, and what explains it: the statistics between the run's ends (rows per
 * execution, an execution's own time, how busy the engine was), CPU time per request of the
 * worker and of this process (the load generator).
 */
async function saturation(w: StartedWorkerProcess, t: Target) {
  const a = await statsSnapshot(w.url, t.name);
  const workerCpu0 = processCpuSeconds(w.proc.pid);
  const threads0 = threadCpuSeconds(w.proc.pid);
  const clientCpu0 = process.cpuUsage();
  const t0 = performance.now();
  const reqPerS = await closedLoop(w, t);
  const seconds = (performance.now() - t0) / 1000;
  const clientCpu = process.cpuUsage(clientCpu0);
  const workerCpu1 = processCpuSeconds(w.proc.pid);
  const threads1 = threadCpuSeconds(w.proc.pid);
  const d = statsDelta(a, await statsSnapshot(w.url, t.name));
  const requests = Math.max(1, reqPerS * seconds);
  const queue = await queueFigures(w, t);
  return {
    reqPerS: Math.round(reqPerS),
    ...d,
    engineBusyShare: d.executionMs === null ? null : round3((d.executionMs * d.executions) / 1000 / seconds),
    workerCpuUsPerRequest:
      workerCpu0 === null || workerCpu1 === null ? null : Math.round(((workerCpu1 - workerCpu0) * 1e6) / requests),
    workerCpuUsPerRequestByThread: threadCpuUsPerRequest(threads0, threads1, requests),
    clientCpuUsPerRequest: Math.round((clientCpu.user + clientCpu.system) / requests),
    queue,
  };
}

/**
 * What this load generator can send at all: the same closed loop against a bare Bun.serve (in a
 * process of its own, like the worker) answering the model's very response bytes.
 */
async function generatorCapacity(w: StartedWorkerProcess, t: Target): Promise<number> {
  const res = await fetch(`${w.url}/v2/models/${t.name}/infer`, {
    method: "POST",
    body: t.body.bytes,
    headers: t.body.headers,
  });
  const answer = join(scratch, `${t.name}.answer.json`);
  await Bun.write(answer, await res.arrayBuffer());
  const code = `const body = await Bun.file(${JSON.stringify(answer)}).arrayBuffer();
const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(r) { await r.arrayBuffer(); return new Response(body, { headers: { "content-type": "application/json" } }); } });
console.log(s.port);`;
  const child = Bun.spawn([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  try {
    const url = `http://127.0.0.1:${first.trim()}`;
    await closedLoop({ url }, t, clients, 1000);
    return Math.round(await closedLoop({ url }, t));
  } finally {
    child.kill();
    await child.exited;
  }
}

type Point = LoopPoint;

/** Open loop (lib/open-loop.ts) from this process. */
function openLoop(w: StartedWorkerProcess, t: Target, rate: number, ms = durationMs): Promise<Point> {
  return runOpenLoop(inferSender(w.url, t.name, t.body), rate, ms);
}

/** The same open loop from a child process of its own (a flood must not delay this process's sends). */
async function openLoopInChild(w: StartedWorkerProcess, t: Target, rate: number, ms = durationMs): Promise<Point> {
  const bodyFile = join(scratch, `${t.name}.flood-body`);
  writeFileSync(bodyFile, t.body.bytes);
  const spec = { url: w.url, model: t.name, bodyFile, headers: t.body.headers, rate, ms };
  const child = Bun.spawn(
    [process.execPath, resolve(import.meta.dir, "lib/open-loop-child.ts"), JSON.stringify(spec)],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`the flood's load generator failed:\n${out}`);
  return JSON.parse(out.trim().split("\n").pop() as string) as Point;
}

type Saturation = Awaited<ReturnType<typeof saturation>>;
const MODES = [
  { label: "noCoalescing", coalesce: false },
  { label: "coalescing", coalesce: true },
] as const;

/**
 * Both workers (coalescing off and on) run side by side and take turns at saturation (4 turns
 * each, the median kept), so a shared machine's other load falls on both alike; then the engine
 * ceiling, the load generator's capacity and each worker's open-loop curve.
 */
async function curves(t: Target): Promise<void> {
  const sat: Record<string, number> = {};
  const cpuUs: Record<string, number | null> = {};
  let ceiling: EngineCeiling | null = null;
  let capacity: number | null = null;
  await result.step(`${t.name} engine ceiling`, async () => {
    ceiling = await engineCeiling(await benchBackend(), t.dir);
    result.figure(`${t.name}.engineCeiling`, ceiling);
    console.log(
      `  ${t.name} engine (in this process): ${ceiling.executionMsBatch1} ms at batch 1, ${ceiling.executionMsLargest} ms at ${t.largest}: coalescing ceiling ${ceiling.ceiling}x`,
    );
  });
  let xla: XlaCpuCeiling | null = null;
  if (xlaModels) {
    await result.step(`${t.name} XLA CPU ceiling`, async () => {
      xla = await xlaCpuCeiling(join(xlaModels, t.name), t.largest);
      result.figure(`${t.name}.xlaCpuCeiling`, xla);
      console.log(
        xla.skipped
          ? `  ${t.name} XLA CPU ceiling skipped: ${xla.skipped}`
          : `  ${t.name} XLA CPU (JAX, same program): ${xla.msBatch1} ms at batch 1, ${xla.msLargest} ms at ${t.largest}: coalescing ceiling ${xla.ceiling}x`,
      );
    });
  }
  await result.step(`${t.name} curves`, async () => {
    const workers: StartedWorkerProcess[] = [];
    try {
      for (const m of MODES) workers.push((await startWith([t], {}, m.coalesce)).w);
      for (const w of workers) await closedLoop(w, t); // warm-up, inline timing included
      const turns: Saturation[][] = MODES.map(() => []);
      for (let turn = 0; turn < 4; turn++) {
        for (const [i, w] of workers.entries()) (turns[i] as Saturation[]).push(await saturation(w, t));
      }
      for (const [i, m] of MODES.entries()) {
        const list = (turns[i] as Saturation[]).sort((a, b) => a.reqPerS - b.reqPerS);
        const s = list[Math.floor(list.length / 2)] as Saturation;
        sat[m.label] = s.reqPerS;
        cpuUs[m.label] = s.workerCpuUsPerRequest;
        result.figure(`${t.name}.${m.label}.saturationReqPerS`, s.reqPerS);
        result.figure(`${t.name}.${m.label}.saturation`, { median: s, turnsReqPerS: list.map((x) => x.reqPerS) });
        console.log(
          `  ${t.name} ${m.label}: saturation ${s.reqPerS} req/s (closed loop, ${clients} clients, median of 4 turns): ${s.rowsPerExecution} rows per execution of ${s.executionMs} ms, engine busy ${s.engineBusyShare}, CPU per request worker ${s.workerCpuUsPerRequest} us, load generator ${s.clientCpuUsPerRequest} us; worker CPU by thread ${JSON.stringify(s.workerCpuUsPerRequestByThread)}`,
        );
      }
      const plain = workers[0] as StartedWorkerProcess;
      capacity = await generatorCapacity(plain, t);
      result.figure(`${t.name}.loadGeneratorCapacityReqPerS`, capacity);
      console.log(`  ${t.name} load generator against a bare Bun.serve: ${capacity} req/s`);
      for (const [i, m] of MODES.entries()) {
        const points: Point[] = [];
        for (const f of [0.25, 0.5, 0.75, 1, 1.5, 2, 3]) {
          const p = await openLoop(
            workers[i] as StartedWorkerProcess,
            t,
            Math.max(1, Math.round(f * (sat.noCoalescing ?? 100))),
          );
          console.log(
            `    ${m.label} offered ${p.offered}/s: ${p.achieved}/s, p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms, failed ${p.failed}`,
          );
          points.push(p);
        }
        result.figure(`${t.name}.${m.label}.curve`, points);
      }
    } finally {
      for (const w of workers) await w.stop();
    }
  });
  result.ratio(
    `${t.name}.saturationCoalescingOverNone`,
    { label: "coalescing on, req/s", value: sat.coalescing ?? null },
    { label: "coalescing off, req/s", value: sat.noCoalescing ?? null },
    ">=3",
  );
  const c = ceiling as EngineCeiling | null;
  result.ratio(
    `${t.name}.engineCeilingOfCoalescing`,
    { label: `${t.largest} x execution ms at batch 1`, value: c ? t.largest * c.executionMsBatch1 : null },
    { label: `execution ms at batch ${t.largest}`, value: c?.executionMsLargest ?? null },
  );
  const x = xla as XlaCpuCeiling | null;
  if (x && !x.skipped) {
    result.ratio(
      `${t.name}.xlaCpuCeilingOfCoalescing`,
      { label: `${t.largest} x XLA CPU ms at batch 1`, value: x.msBatch1 === null ? null : t.largest * x.msBatch1 },
      { label: `XLA CPU ms at batch ${t.largest}`, value: x.msLargest },
    );
  }
  // Where the worker's cores are the bottleneck (the CPU engine on a few cores), throughput
  // follows the worker's CPU time per request: coalescing saves only the execution's share of it.
  result.ratio(
    `${t.name}.workerCpuPerRequestNoneOverCoalescing`,
    { label: "worker CPU us per request, coalescing off", value: cpuUs.noCoalescing ?? null },
    { label: "worker CPU us per request, coalescing on", value: cpuUs.coalescing ?? null },
  );
  result.ratio(
    `${t.name}.loadGeneratorHeadroom`,
    { label: "load generator against a bare server, req/s", value: capacity },
    { label: "worker saturation with coalescing, req/s", value: sat.coalescing ?? null },
  );
}

/** A model's scheduler queue figures from its metadata (the worker's own extension). */
async function queueFigures(w: StartedWorkerProcess, t: Target): Promise<unknown> {
  const meta = (await (await fetch(`${w.url}/v2/models/${t.name}`)).json()) as { xlaserve?: { queue?: unknown } };
  return meta.xlaserve?.queue ?? null;
}

async function fairness(light: Target, heavy: Target): Promise<void> {
  const solo: Record<string, number> = {};
  const flooded: Record<string, number> = {};
  for (const discipline of ["fifo", "fair"]) {
    await result.step(`fairness ${discipline}`, async () => {
      const { w, stop } = await startWith(
        [light, heavy],
        { XLASERVE_SCHEDULER__DISCIPLINE: discipline },
        true,
        floodConfig(heavy),
      );
      try {
        // Warm-up: past the requests after which the worker times a model's programs for inline
        // runs (INLINE_AFTER_REQUESTS), as a model in steady traffic is, then at the rates measured.
        for (const t of [light, heavy]) await closedLoop(w, t, 8, 1500);
        await Bun.sleep(300);
        await openLoop(w, light, lightRate, 1000);
        await openLoop(w, heavy, lightRate * floodFactor, 1000);
        // The light model's statistics around each run: how much of its client-side latency
        // the worker itself accounts for (queue, execution, arrival to answer).
        const s0 = await statsSnapshot(w.url, light.name);
        const alone = await openLoop(w, light, lightRate);
        const s1 = await statsSnapshot(w.url, light.name);
        // The flood from a process of its own: sent from this one, its large bodies would hold up
        // the light model's sends and answers here, and that wait would count as the worker's.
        const [withFlood, flood] = await Promise.all([
          openLoop(w, light, lightRate),
          openLoopInChild(w, heavy, lightRate * floodFactor),
        ]);
        const lightInWorker = {
          alone: statsDelta(s0, s1),
          withFlood: statsDelta(s1, await statsSnapshot(w.url, light.name)),
        };
        solo[discipline] = alone.p99Ms;
        flooded[discipline] = withFlood.p99Ms;
        console.log(
          `  ${discipline}: light p99 alone ${alone.p99Ms} ms, with a ${floodFactor}x flood ${withFlood.p99Ms} ms (flood ${flood.achieved}/s of ${flood.offered}/s, ${flood.failed} refused or failed)`,
        );
        // Each model's queue figures after the flood (dispatches, rows per execution, mean wait,
        // shed counts, the learned cost per batch size): what the discipline saw.
        const queues: Record<string, unknown> = {};
        for (const t of [light, heavy]) queues[t.name] = await queueFigures(w, t);
        result.figure(`fairness.${discipline}`, { alone, withFlood, flood, queues, lightInWorker });
      } finally {
        await stop();
      }
    });
  }
  for (const d of ["fifo", "fair"]) {
    result.ratio(
      `fairness.${d}.lightP99FloodedOverSolo`,
      { label: `${light.name} p99 with ${heavy.name} at ${floodFactor}x, ms`, value: flooded[d] ?? null },
      { label: `${light.name} p99 alone, ms`, value: solo[d] ?? null },
      d === "fair" ? "<=2" : undefined,
    );
  }
}

/** The synthetic image bundle (tests/e2e/image-bundle.ts), written into this run's scratch folder. */
async function imageTarget(): Promise<Target> {
  const dir = join(scratch, "bundles", "image");
  writeImageBundle(dir, "image");
  return targetOf(dir, "image");
}

let backend: Awaited<ReturnType<typeof createBenchBackend>> | null = null;
async function benchBackend() {
  backend ??= await createBenchBackend(engine, plugin ?? process.env.XLASERVE_PJRT_PLUGIN);
  return backend;
}

const mlp = await targetOf(join(examples, "mlp"), "mlp");
const resnetClass = values.image
  ? await imageTarget()
  : typeof values.resnet === "string"
    ? await targetOf(resolve(values.resnet), basename(resolve(values.resnet)))
    : await targetOf(join(examples, "cnn"), "cnn");
result.figure("resnetClassModel", resnetClass.name);
const parts = typeof values.only === "string" ? values.only.split(",") : ["mlp", "resnet", "fairness"];
for (const p of parts) if (!["mlp", "resnet", "fairness"].includes(p)) throw new Error(`--only: unknown part ${p}`);
result.figure("parts", parts);
if (parts.includes("mlp")) await curves(mlp);
if (parts.includes("resnet")) await curves(resnetClass);
if (parts.includes("fairness")) await fairness(mlp, resnetClass);
await (backend as Awaited<ReturnType<typeof createBenchBackend>> | null)?.dispose();
result.write();

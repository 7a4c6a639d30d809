/**
 * Fairness over real HTTP: the worker CLI in a process of its own on the CPU engine, a light
 * model (the MLP, a request at a time on a schedule from this process) while another model (the
 * CNN, four rows a request) is flooded by a closed loop of FLOOD_CLIENTS from a child process, so
 * its queue stays that deep however fast the machine is, and a third (the synthetic image
 * bundle, 602 KB bodies) by IMAGE_CLIENTS into a queue of IMAGE_QUEUE_DEPTH, so most of its
 * requests are refused before their bodies are read while the HTTP thread serves the light one. One execution at a time on the engine
 * under both disciplines: under fair the light model is owed device time, so each of its
 * requests waits behind at most the one flood execution running; under fifo behind every flood
 * request queued before it (dozens). Both run, so the test shows its bound is one that fifo
 * breaks: the fair p99 within it, the fifo p99 past it.
 *
 * The bound is set from what this machine measures, not from a fixed figure: the light model's
 * p99 alone, plus a few of the flood's own executions (their mean time, from the statistics
 * extension), plus a margin for two shared cores. Runs stay on the engine thread
 * (placement.inlineMaxUs 0) and requests are not coalesced, so the discipline alone orders them.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type TempRepo, f32BinaryBody, makeRepo } from "./helpers.ts";
import { IMAGE_SHAPE, writeImageBundle } from "./image-bundle.ts";

const MAIN = resolve(import.meta.dir, "../../apps/worker/src/main.ts");
const FLOOD = resolve(import.meta.dir, "flood-child.ts");
const repo: TempRepo = makeRepo(["mlp", "cnn"]);
writeImageBundle(join(repo.repository, "image"));
afterAll(() => repo.cleanup());

const LIGHT_RATE = 25;
const MEASURE_MS = 5000;
const FLOOD_CLIENTS = 48;
const FLOOD_ROWS = 4;
/** Clients of the image model's flood (602 KB bodies), whose queue holds IMAGE_QUEUE_DEPTH: most are refused. */
const IMAGE_CLIENTS = 4;
const IMAGE_QUEUE_DEPTH = 2;

interface WorkerProcess {
  readonly url: string;
  stop(): Promise<void>;
}

async function startWorker(discipline: "fair" | "fifo"): Promise<WorkerProcess> {
  const config = join(repo.root, `config-${discipline}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      scheduler: { discipline, maxInFlight: 1, models: { image: { queueDepth: IMAGE_QUEUE_DEPTH } } },
      placement: { inlineMaxUs: 0 },
      concurrency: { dynamicBatching: false },
    }),
  );
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("XLASERVE_")) env[k] = v;
  env.XLASERVE_LOG_LEVEL = "warn";
  const proc = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "serve",
      "--engine",
      "reactant",
      "--repository",
      repo.repository,
      "--state-dir",
      repo.stateDir,
      "--port",
      "0",
      "--no-watch",
      "--config",
      config,
    ],
    { stdout: "pipe", stderr: "pipe", env },
  );
  const reader = proc.stdout.getReader();
  let seen = "";
  let url: string | null = null;
  const deadline = performance.now() + 120_000;
  while (!url && performance.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
    url = /listening on (\S+)/.exec(seen)?.[1] ?? null;
  }
  if (!url) {
    proc.kill("SIGKILL");
    throw new Error(`the worker did not start:\n${seen}\n${await new Response(proc.stderr).text()}`);
  }
  // Keep draining its output so the worker never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done) {}
  })();
  void new Response(proc.stderr).text();
  const at = url;
  for (;;) {
    const r = await fetch(`${at}/v2/health/ready`).catch(() => null);
    if (r?.status === 200) break;
    if (performance.now() > deadline) throw new Error("the worker never became ready");
    await Bun.sleep(20);
  }
  return {
    url: at,
    async stop() {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}

const SHAPES = { mlp: [64], cnn: [32, 32, 3], image: [...IMAGE_SHAPE] } as const;

function bodyOf(model: "mlp" | "cnn" | "image", rows: number) {
  const shape = [rows, ...SHAPES[model]];
  const n = shape.reduce((a, b) => a * b, 1);
  const data = Float32Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000);
  const name = model === "mlp" ? "features" : "image";
  const { body, headerLength } = f32BinaryBody(new Map([[name, { dtype: "f32", shape, data }]]));
  return {
    body,
    headers: { "inference-header-content-length": String(headerLength), "content-type": "application/octet-stream" },
  };
}

const LIGHT = bodyOf("mlp", 1);
const HEAVY = bodyOf("cnn", FLOOD_ROWS);
const IMAGE = bodyOf("image", 1);

async function send(url: string, model: string, b: typeof LIGHT): Promise<number> {
  const res = await fetch(`${url}/v2/models/${model}/infer`, { method: "POST", body: b.body, headers: b.headers });
  await res.arrayBuffer();
  return res.status;
}

/** The light model on a schedule for `ms`: each latency from its scheduled send. */
async function lightLoop(url: string, ms: number): Promise<{ p99: number; failed: number }> {
  const latencies: number[] = [];
  let failed = 0;
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < (LIGHT_RATE * ms) / 1000; i++) {
    const at = t0 + (i * 1000) / LIGHT_RATE;
    const wait = at - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    pending.push(
      send(url, "mlp", LIGHT).then((status) => {
        if (status === 200) latencies.push(performance.now() - at);
        else failed++;
      }),
    );
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)] ?? Number.NaN;
  return { p99, failed };
}

/** The flood's mean execution time (ms), from the statistics extension. */
async function floodExecutionMs(url: string): Promise<number> {
  const res = await fetch(`${url}/v2/models/cnn/stats`);
  const s = (
    (await res.json()) as {
      model_stats: { execution_count: number; inference_stats: { compute_infer: { ns: number } } }[];
    }
  ).model_stats[0];
  if (!s || s.execution_count === 0) throw new Error("the flood never ran");
  return s.inference_stats.compute_infer.ns / 1e6 / s.execution_count;
}

interface Run {
  readonly soloP99: number;
  readonly floodedP99: number;
  readonly floodExecMs: number;
  readonly flood: FloodCounts;
  readonly imageFlood: FloodCounts;
}

interface FloodCounts {
  readonly ok: number;
  readonly refused: number;
  readonly failed: number;
}

/** A closed-loop flood from a child process (flood-child.ts); resolves to its counts. */
function flood(url: string, model: string, b: typeof LIGHT, clients: number, ms: number): Promise<FloodCounts> {
  const bodyFile = join(repo.root, `${model}.body`);
  writeFileSync(bodyFile, b.body);
  const spec = { url, model, bodyFile, headers: b.headers, clients, ms };
  const child = Bun.spawn([process.execPath, FLOOD, JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
  return (async () => {
    const out = await new Response(child.stdout).text();
    if ((await child.exited) !== 0) throw new Error(`the ${model} flood failed:\n${out}`);
    return JSON.parse(out.trim().split("\n").pop() as string) as FloodCounts;
  })();
}

async function measure(discipline: "fair" | "fifo"): Promise<Run> {
  const w = await startWorker(discipline);
  try {
    // Warm both models (first runs, the engine's pools) before anything is timed.
    for (let i = 0; i < 20; i++) {
      await Promise.all([send(w.url, "mlp", LIGHT), send(w.url, "cnn", HEAVY), send(w.url, "image", IMAGE)]);
    }
    const solo = await lightLoop(w.url, 2000);
    const floods = [
      flood(w.url, "cnn", HEAVY, FLOOD_CLIENTS, MEASURE_MS + 1500),
      flood(w.url, "image", IMAGE, IMAGE_CLIENTS, MEASURE_MS + 1500),
    ];
    // Let the floods' queues fill before the light model is timed.
    await Bun.sleep(1000);
    const flooded = await lightLoop(w.url, MEASURE_MS);
    const [cnn, image] = (await Promise.all(floods)) as [FloodCounts, FloodCounts];
    expect(solo.failed + flooded.failed).toBe(0);
    return {
      soloP99: solo.p99,
      floodedP99: flooded.p99,
      floodExecMs: await floodExecutionMs(w.url),
      flood: cnn,
      imageFlood: image,
    };
  } finally {
    await w.stop();
  }
}

/** What the light model's p99 may be under the flood: alone, plus a few flood executions, plus margin. */
function bound(r: Run): number {
  return r.soloP99 + 4 * r.floodExecMs + 60;
}

describe("fairness under a flood (worker process, CPU engine)", () => {
  test("under fair the light model's p99 stays bounded while two other models flood; under fifo it does not", async () => {
    // fair gets up to three attempts: on two shared cores another process can stall this one for
    // a while. fifo's excess is structural (dozens of executions), and gets none.
    let fair = await measure("fair");
    for (let attempt = 1; attempt < 3 && fair.floodedP99 >= bound(fair); attempt++) fair = await measure("fair");
    const fifo = await measure("fifo");
    const report = { fair: { ...fair, bound: bound(fair) }, fifo: { ...fifo, bound: bound(fifo) } };
    console.log(`fairness: ${JSON.stringify(report)}`);
    // The floods really ran: the CNN's steadily, the image model's mostly refused.
    for (const r of [fair, fifo]) {
      expect(r.flood.ok).toBeGreaterThan(50);
      expect(r.imageFlood.refused).toBeGreaterThan(0);
      expect(r.flood.failed + r.imageFlood.failed).toBe(0);
    }
    expect(fair.floodedP99).toBeLessThan(bound(fair));
    expect(fifo.floodedP99).toBeGreaterThan(bound(fifo));
  }, 240_000);
});

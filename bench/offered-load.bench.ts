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
 * Fairness: the light model (MLP) at --light-rate alone, then with the other model flooding at
 * 10x that rate, under fifo and under fair; the ratio is the light model's p99 with the flood
 * over its solo p99 (goal <= 2x under fair).
 *
 *   bun bench/offered-load.bench.ts [--engine reactant|pjrt] [--plugin P] [--models DIR]
 *     [--resnet DIR] [--duration-s 3] [--clients 32] [--light-rate 50] [--results-dir DIR]
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { intFlag, parseFlags } from "./lib/args.ts";
import { BenchResult } from "./lib/results.ts";
import { percentile } from "./lib/stats.ts";
import { type StartedWorkerProcess, startWorkerProcess } from "./lib/worker.ts";

const USAGE = `bun bench/offered-load.bench.ts [--engine reactant|pjrt] [--plugin P] [--models DIR] [--resnet DIR]
  [--duration-s 3] [--clients 32] [--light-rate 50] [--results-dir DIR]`;
const { values } = parseFlags(USAGE, {
  engine: { type: "string", default: "reactant" },
  plugin: { type: "string" },
  models: { type: "string" },
  resnet: { type: "string" },
  "duration-s": { type: "string", default: "3" },
  clients: { type: "string", default: "32" },
  "light-rate": { type: "string", default: "50" },
  "results-dir": { type: "string" },
});
const engine = values.engine === "pjrt" ? "pjrt" : "reactant";
const plugin = typeof values.plugin === "string" ? values.plugin : undefined;
const durationMs = Number(values["duration-s"]) * 1000;
const clients = intFlag(values.clients, 32, "clients");
const lightRate = intFlag(values["light-rate"], 50, "light-rate");
const examples = resolve(
  typeof values.models === "string" ? values.models : resolve(import.meta.dir, "../examples/models"),
);

const result = new BenchResult(`offered-load-${engine}`);
if (typeof values["results-dir"] === "string") result.dir = values["results-dir"];
result.figure("engine", engine);
result.figure("durationMs", durationMs);
result.figure("closedLoopClients", clients);

/** A model's request: one row of the first input, as JSON (the same bytes every time). */
interface Target {
  readonly name: string;
  readonly dir: string;
  readonly body: string;
}

async function targetOf(dir: string, name: string): Promise<Target> {
  const { loadBundle } = await import("@xlaserve/core/bundle/load.ts");
  const bundle = await loadBundle(dir);
  const spec = bundle.manifest.executableInputs[0];
  if (!spec) throw new Error(`${name} has no inputs`);
  const shape = spec.dims.map((d) => (d.kind === "batch" ? 1 : d.kind === "fixed" ? d.size : 1));
  const n = shape.reduce((a, b) => a * b, 1);
  const data = Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000);
  const body = JSON.stringify({ inputs: [{ name: spec.name, datatype: "FP32", shape, data }] });
  return { name, dir, body };
}

/** A temporary repository holding the given bundles (links to them, so nothing is copied). */
function repository(targets: readonly Target[]): { path: string; state: string; cleanup(): void } {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-offered-"));
  const path = join(root, "models");
  mkdirSync(path);
  for (const t of targets) symlinkSync(t.dir, join(path, t.name));
  return { path, state: join(root, "state"), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

async function startWith(targets: readonly Target[], env: Record<string, string>, coalesce: boolean) {
  const repo = repository(targets);
  const w = await startWorkerProcess({
    repository: repo.path,
    stateDir: repo.state,
    engine,
    plugin,
    extraArgs: coalesce ? ["--dynamic-batching"] : [],
    env: { XLASERVE_LOG_LEVEL: "warn", ...env },
  });
  const stop = async () => {
    await w.stop();
    repo.cleanup();
  };
  return { w, stop };
}

function post(w: StartedWorkerProcess, t: Target): Promise<number> {
  return fetch(`${w.url}/v2/models/${t.name}/infer`, { method: "POST", body: t.body }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
}

/** Closed loop: `clients` requests always in flight for the duration; completed requests per second. */
async function saturation(w: StartedWorkerProcess, t: Target): Promise<number> {
  const end = performance.now() + durationMs;
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) if ((await post(w, t)) === 200) done++;
    }),
  );
  return done / (durationMs / 1000);
}

interface Point {
  readonly offered: number;
  readonly achieved: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failed: number;
}

/** Open loop: one request every 1/rate s on schedule; each latency from its scheduled time. */
async function openLoop(w: StartedWorkerProcess, t: Target, rate: number, ms = durationMs): Promise<Point> {
  const latencies: number[] = [];
  let failed = 0;
  const t0 = performance.now();
  const total = Math.max(1, Math.floor((rate * ms) / 1000));
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const at = t0 + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    pending.push(
      post(w, t).then(
        (status) => {
          if (status === 200) latencies.push(performance.now() - at);
          else failed++;
        },
        () => {
          failed++;
        },
      ),
    );
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - t0) / 1000;
  return {
    offered: rate,
    achieved: Math.round(latencies.length / elapsed),
    p50Ms: round3(percentile(latencies, 50)),
    p99Ms: round3(percentile(latencies, 99)),
    failed,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

async function curves(t: Target): Promise<void> {
  const sat: Record<string, number> = {};
  for (const coalesce of [false, true]) {
    const label = coalesce ? "coalescing" : "noCoalescing";
    await result.step(`${t.name} ${label}`, async () => {
      const { w, stop } = await startWith([t], {}, coalesce);
      try {
        await saturation(w, t); // warm-up, inline timing included
        sat[label] = Math.round(await saturation(w, t));
        console.log(`  ${t.name} ${label}: saturation ${sat[label]} req/s (closed loop, ${clients} clients)`);
        const points: Point[] = [];
        for (const f of [0.25, 0.5, 0.75, 1, 1.5, 2, 3]) {
          const p = await openLoop(w, t, Math.max(1, Math.round(f * (sat.noCoalescing ?? sat[label] ?? 100))));
          console.log(
            `    offered ${p.offered}/s: ${p.achieved}/s, p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms, failed ${p.failed}`,
          );
          points.push(p);
        }
        result.figure(`${t.name}.${label}.saturationReqPerS`, sat[label]);
        result.figure(`${t.name}.${label}.curve`, points);
      } finally {
        await stop();
      }
    });
  }
  result.ratio(
    `${t.name}.saturationCoalescingOverNone`,
    { label: "coalescing on, req/s", value: sat.coalescing ?? null },
    { label: "coalescing off, req/s", value: sat.noCoalescing ?? null },
    ">=3",
  );
}

async function fairness(light: Target, heavy: Target): Promise<void> {
  const solo: Record<string, number> = {};
  const flooded: Record<string, number> = {};
  for (const discipline of ["fifo", "fair"]) {
    await result.step(`fairness ${discipline}`, async () => {
      const { w, stop } = await startWith([light, heavy], { XLASERVE_SCHEDULER__DISCIPLINE: discipline }, true);
      try {
        await openLoop(w, light, lightRate, 1000); // warm-up
        await openLoop(w, heavy, lightRate * 10, 1000);
        const alone = await openLoop(w, light, lightRate);
        const [withFlood, flood] = await Promise.all([
          openLoop(w, light, lightRate),
          openLoop(w, heavy, lightRate * 10),
        ]);
        solo[discipline] = alone.p99Ms;
        flooded[discipline] = withFlood.p99Ms;
        console.log(
          `  ${discipline}: light p99 alone ${alone.p99Ms} ms, with a 10x flood ${withFlood.p99Ms} ms (flood ${flood.achieved}/s of ${flood.offered}/s)`,
        );
        result.figure(`fairness.${discipline}`, { alone, withFlood, flood });
      } finally {
        await stop();
      }
    });
  }
  for (const d of ["fifo", "fair"]) {
    result.ratio(
      `fairness.${d}.lightP99FloodedOverSolo`,
      { label: `${light.name} p99 with ${heavy.name} at 10x, ms`, value: flooded[d] ?? null },
      { label: `${light.name} p99 alone, ms`, value: solo[d] ?? null },
      d === "fair" ? "<=2" : undefined,
    );
  }
}

const mlp = await targetOf(join(examples, "mlp"), "mlp");
const resnetClass =
  typeof values.resnet === "string"
    ? await targetOf(resolve(values.resnet), "resnet50")
    : await targetOf(join(examples, "cnn"), "cnn");
result.figure("resnetClassModel", resnetClass.name);
await curves(mlp);
await curves(resnetClass);
await fairness(mlp, resnetClass);
result.write();

/**
 * The device scheduler over real HTTP on the real CPU engine: disciplines, coalescing rules,
 * priorities, deadlines and shedding. To make the queues fill deterministically, a test holds the
 * device as a memory probe does (the registry's device lock, exclusively): the first execution
 * dispatched waits on it, holding the device's one execution slot, and everything sent meanwhile
 * waits in the scheduler's queues until the test lets the device go.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { StartedWorker, WorkerOverrides } from "../../apps/worker/src/index.ts";
import type { RuntimeModel } from "../../apps/worker/src/model/runtime-model.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, makeRepo, waitFor } from "./helpers.ts";

type Config = NonNullable<WorkerOverrides["config"]>;

const repo: TempRepo = makeRepo(["mlp", "cnn"]);
const logs = collectLogs();
let worker: StartedWorker | null = null;

afterEach(async () => {
  await worker?.stop();
  worker = null;
});
afterAll(() => repo.cleanup());

async function start(config: Config): Promise<StartedWorker> {
  worker = await startCpuWorker(
    repo,
    logs.logger,
    { repository: { dynamic: false }, ...config },
    // Every run stays on the engine thread, where the device lock applies.
    { inlineMaxUs: 0 },
  );
  return worker;
}

function model(w: StartedWorker, name: string): RuntimeModel {
  const m = w.registry.models().find((x) => x.name === name);
  if (!m) throw new Error(`no model ${name}`);
  return m;
}

/** Takes the device as a memory probe does; resolves once held, with the function that lets it go. */
async function holdDevice(w: StartedWorker): Promise<() => void> {
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  await new Promise<void>((entered) => {
    void w.registry.deviceLock.exclusive(async () => {
      entered();
      await held;
    });
  });
  return release;
}

const ROW = { mlp: 64, cnn: 32 * 32 * 3 } as const;
const SHAPE = { mlp: [64], cnn: [32, 32, 3] } as const;

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  /** Order in which the answers arrived, from 0. */
  readonly order: number;
}

let arrived = 0;

/** One infer request of `rows` rows (row r filled with r + `seed`) with request parameters. */
function infer(
  w: StartedWorker,
  name: "mlp" | "cnn",
  rows: number,
  parameters: Record<string, number> = {},
  seed = 0,
): Promise<Answer> {
  const data = Array.from({ length: rows * ROW[name] }, (_, i) => Math.floor(i / ROW[name]) + seed + (i % 7) * 0.01);
  const body = JSON.stringify({
    inputs: [{ name: name === "mlp" ? "features" : "image", datatype: "FP32", shape: [rows, ...SHAPE[name]], data }],
    parameters,
  });
  return fetch(`${w.url}/v2/models/${name}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  }).then(async (res) => ({
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    order: arrived++,
  }));
}

/**
 * Sends a first request and waits until its execution holds the device's slot (blocked on the
 * held device); its answer comes once the device is let go.
 */
async function occupy(w: StartedWorker, name: "mlp" | "cnn"): Promise<{ answer: Promise<Answer> }> {
  const answer = infer(w, name, 1);
  await waitFor(() => model(w, name).queueFigures().running === 1 || undefined);
  return { answer };
}

async function queued(w: StartedWorker, name: string, n: number): Promise<void> {
  await waitFor(() => model(w, name).queueFigures().queued === n || undefined);
}

async function stats(w: StartedWorker, name: string) {
  const res = await fetch(`${w.url}/v2/models/${name}/stats`);
  const body = (await res.json()) as {
    model_stats: Array<{
      inference_count: number;
      execution_count: number;
      /** By the rows run together. */
      batch_stats: Array<{ batch_size: number; compute_infer: { count: number } }>;
    }>;
  };
  const s = body.model_stats[0];
  if (!s) throw new Error("no stats");
  return {
    inferences: s.inference_count,
    executions: s.execution_count,
    bySize: Object.fromEntries(s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count])),
  };
}

const logitsOf = (a: Answer) =>
  ((a.body.outputs as Array<{ name: string; data: number[] }>).find((o) => o.name === "logits")?.data ?? []).slice();

describe("coalescing at compiled batch sizes (MLP: b1, b8)", () => {
  test("the largest size the queue fills, in arrival order: nine queued rows run as b8 then b1", async () => {
    const w = await start({
      concurrency: { dynamicBatching: true },
      scheduler: { maxInFlight: 1, batchSizeChoice: "fill" },
    });
    const before = await stats(w, "mlp");
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const rest = Array.from({ length: 9 }, (_, i) => infer(w, "mlp", 1, {}, i + 1));
    await queued(w, "mlp", 9);
    release();
    const answers = await Promise.all([first, ...rest]);
    for (const a of answers) expect(a.status).toBe(200);
    const after = await stats(w, "mlp");
    expect(after.inferences - before.inferences).toBe(10);
    // the held one at b1, then eight together at b8, then the ninth at b1
    expect((after.bySize[8] ?? 0) - (before.bySize[8] ?? 0)).toBe(1);
    expect((after.bySize[1] ?? 0) - (before.bySize[1] ?? 0)).toBe(2);
    const q = model(w, "mlp").queueFigures();
    expect(q.batchFill).toBeGreaterThan(0.9);
    // each coalesced request got its own rows back
    for (const a of answers) expect(logitsOf(a)).toHaveLength(10);
  }, 60_000);

  test("a request is never split, and one that fills no size runs padded to the smallest that holds it", async () => {
    const w = await start({ concurrency: { dynamicBatching: true }, scheduler: { maxInFlight: 1 } });
    const solo = await infer(w, "mlp", 5, {}, 100);
    const before = await stats(w, "mlp");
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const a = infer(w, "mlp", 5, {}, 100);
    const b = infer(w, "mlp", 5, {}, 100);
    await queued(w, "mlp", 2);
    release();
    const [, ra, rb] = await Promise.all([first, a, b]);
    const after = await stats(w, "mlp");
    // 5 + 5 rows do not fit b8 together: two executions of 5 rows (batch_stats counts rows run
    // together), each padded to b8
    expect((after.bySize[5] ?? 0) - (before.bySize[5] ?? 0)).toBe(2);
    expect(after.executions - before.executions).toBe(3);
    expect(model(w, "mlp").queueFigures().batchFill).toBeCloseTo(16 / 25, 3);
    // the same rows through the same program, padded the same way: the same bits as alone
    expect(logitsOf(ra as Answer)).toEqual(logitsOf(solo));
    expect(logitsOf(rb as Answer)).toEqual(logitsOf(solo));
  }, 60_000);

  test("under the fill rule a per-model maxBatchSize caps the rows coalesced: eight queued rows under a cap of 4 run at b1", async () => {
    const w = await start({
      concurrency: { dynamicBatching: true },
      scheduler: { maxInFlight: 1, batchSizeChoice: "fill", models: { mlp: { maxBatchSize: 4 } } },
    });
    const before = await stats(w, "mlp");
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const rest = Array.from({ length: 8 }, (_, i) => infer(w, "mlp", 1, {}, i));
    await queued(w, "mlp", 8);
    release();
    await Promise.all([first, ...rest]);
    const after = await stats(w, "mlp");
    expect((after.bySize[8] ?? 0) - (before.bySize[8] ?? 0)).toBe(0);
    expect((after.bySize[1] ?? 0) - (before.bySize[1] ?? 0)).toBe(9);
  }, 60_000);

  test("by default a size not measured yet runs once when it carries more rows: five queued rows go at b8 together", async () => {
    const w = await start({ concurrency: { dynamicBatching: true }, scheduler: { maxInFlight: 1 } });
    const before = await stats(w, "mlp");
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const rest = Array.from({ length: 5 }, (_, i) => infer(w, "mlp", 1, {}, i + 1));
    await queued(w, "mlp", 5);
    await Bun.sleep(300);
    release();
    const answers = await Promise.all([first, ...rest]);
    for (const a of answers) expect(a.status).toBe(200);
    const after = await stats(w, "mlp");
    // the fill rule would run them one by one at b1; b8 had not run, so it runs them all at once
    expect((after.bySize[5] ?? 0) - (before.bySize[5] ?? 0)).toBe(1);
    expect(after.executions - before.executions).toBe(2);
    const costs = model(w, "mlp").queueFigures().costMs;
    expect(Object.keys(costs).sort()).toEqual(["b1", "b8"]);
    // the held execution's cost is its own run, not the time it waited for the device
    expect(costs.b1 as number).toBeLessThan(200);
  }, 60_000);

  test("a max queue delay holds a partial batch until it fills or the window ends", async () => {
    const w = await start({ concurrency: { dynamicBatching: true }, scheduler: { maxQueueDelayUs: 400_000 } });
    const before = await stats(w, "mlp");
    const t0 = performance.now();
    const eight = await Promise.all(Array.from({ length: 8 }, (_, i) => infer(w, "mlp", 1, {}, i)));
    // the eighth row filled b8: it left at once, long before the window ends
    expect(performance.now() - t0).toBeLessThan(350);
    for (const a of eight) expect(a.status).toBe(200);
    const t1 = performance.now();
    const lone = await infer(w, "mlp", 1);
    expect(lone.status).toBe(200);
    expect(performance.now() - t1).toBeGreaterThan(300);
    const after = await stats(w, "mlp");
    expect((after.bySize[8] ?? 0) - (before.bySize[8] ?? 0)).toBe(1);
    expect((after.bySize[1] ?? 0) - (before.bySize[1] ?? 0)).toBe(1);
  }, 60_000);
});

describe("disciplines (two models, one execution at a time)", () => {
  /** The held MLP first, then six more MLP requests and one CNN request queued behind it; the CNN's place in the answers. */
  async function cnnPlace(config: Config, cnnParameters: Record<string, number> = {}): Promise<number> {
    const w = await start(config);
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const flood = Array.from({ length: 6 }, (_, i) => infer(w, "mlp", 1, {}, i));
    await queued(w, "mlp", 6);
    const light = infer(w, "cnn", 1, cnnParameters);
    await queued(w, "cnn", 1);
    arrived = 0;
    release();
    const answers = await Promise.all([first, ...flood, light]);
    for (const a of answers) expect(a.status).toBe(200);
    return (answers.at(-1) as Answer).order - (answers[0] as Answer).order;
  }

  test("fifo serves the oldest request first: the CNN, sent last, is answered last", async () => {
    expect(await cnnPlace({ scheduler: { discipline: "fifo", maxInFlight: 1 } })).toBe(7);
  }, 60_000);

  test("fair serves the model owed device time: the CNN goes right after the held MLP", async () => {
    expect(await cnnPlace({ scheduler: { discipline: "fair" } })).toBe(1);
  }, 60_000);

  test("edf serves the earliest deadline first: the CNN with a timeout goes right after the held MLP", async () => {
    expect(await cnnPlace({ scheduler: { discipline: "edf" } }, { timeout: 30_000_000 })).toBe(1);
  }, 60_000);

  test("a better priority level goes first whatever the discipline", async () => {
    expect(await cnnPlace({ scheduler: { discipline: "fifo", maxInFlight: 1 } }, { priority: 1 })).toBe(1);
  }, 60_000);
});

describe("batch invariance", () => {
  test("each coalescing model reports whether coalescing changes an output bit, in its metadata and log", async () => {
    const w = await start({ concurrency: { dynamicBatching: true } });
    const report = await waitFor(async () => {
      const meta = (await (await fetch(`${w.url}/v2/models/mlp`)).json()) as {
        xlaserve?: { batchInvariance?: { invariant: boolean; rows: number; checks: { size: number }[] } };
      };
      return meta.xlaserve?.batchInvariance ?? null;
    });
    expect(report.rows).toBe(1);
    expect(report.checks.map((c) => c.size)).toEqual([8]);
    expect(typeof report.invariant).toBe("boolean");
    const line = logs.find("batch invariance").find((l) => l.model === "mlp");
    expect(line?.invariant).toBe(report.invariant);
  }, 60_000);
});

describe("deadlines and shedding", () => {
  test("a request whose timeout passes while it waits is dropped before it runs: 504, and it never ran", async () => {
    const w = await start({ scheduler: { maxInFlight: 1 } });
    const before = await stats(w, "mlp");
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const t0 = performance.now();
    const late = await infer(w, "mlp", 1, { timeout: 100_000 });
    expect(late.status).toBe(504);
    expect(String(late.body.error)).toContain("deadline passed while it was queued");
    expect(performance.now() - t0).toBeLessThan(5_000);
    release();
    expect((await first).status).toBe(200);
    const after = await stats(w, "mlp");
    // only the held request ran
    expect(after.executions - before.executions).toBe(1);
    expect(model(w, "mlp").queueFigures().shed.deadline).toBe(1);
    // the worker serves on
    expect((await infer(w, "mlp", 1)).status).toBe(200);
  }, 60_000);

  test("a bad timeout or priority is a clear 400", async () => {
    const w = await start({});
    const bad = await infer(w, "mlp", 1, { timeout: -5 });
    expect(bad.status).toBe(400);
    expect(String(bad.body.error)).toContain("parameters.timeout must be a non-negative integer of microseconds");
    const worse = await infer(w, "mlp", 1, { priority: 1.5 });
    expect(worse.status).toBe(400);
    expect(String(worse.body.error)).toContain("parameters.priority must be a non-negative integer");
  }, 60_000);

  test("a full queue sheds with 429 at once; the queued requests still run", async () => {
    const w = await start({ concurrency: { queueDepth: 2 }, scheduler: { maxInFlight: 1 } });
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const waiting = [infer(w, "mlp", 1), infer(w, "mlp", 1)];
    await queued(w, "mlp", 2);
    const shed = await infer(w, "mlp", 1);
    expect(shed.status).toBe(429);
    expect(String(shed.body.error)).toContain("request queue is full");
    // Refused before its body is read: a body that is not even JSON gets the 429, not a 400.
    const unread = await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body: "not json at all" });
    expect(unread.status).toBe(429);
    expect(String(((await unread.json()) as { error: string }).error)).toContain("request queue is full");
    expect(unread.headers.get("connection")).not.toBe("close");
    // A large refused body is not drained: the answer closes the connection instead.
    const large = await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body: new Uint8Array(600_000) });
    expect(large.status).toBe(429);
    expect(large.headers.get("connection")).toBe("close");
    await large.arrayBuffer();
    release();
    for (const a of await Promise.all([first, ...waiting])) expect(a.status).toBe(200);
    const metrics = await (await fetch(`${w.url}/metrics`)).text();
    expect(metrics).toContain('worker_scheduler_shed_total{model="mlp",reason="queue_full"} 3');
    // A refusal under overload is counted, not warned about: one warn line per 429 would cost the
    // HTTP thread more than the refusal itself, at a flood's rate.
    expect(logs.find("infer failed").filter((l) => l.status === 429)).toEqual([]);
    expect(logs.find("infer refused: queue full").length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  test("the device-wide queue bound sheds across models", async () => {
    const w = await start({ scheduler: { maxInFlight: 1, maxQueued: 1 } });
    const release = await holdDevice(w);
    const { answer: first } = await occupy(w, "mlp");
    const waiting = infer(w, "mlp", 1);
    await queued(w, "mlp", 1);
    const shed = await infer(w, "cnn", 1);
    expect(shed.status).toBe(429);
    expect(String(shed.body.error)).toContain("the device's queue is full");
    release();
    for (const a of await Promise.all([first, waiting])) expect(a.status).toBe(200);
  }, 60_000);
});

describe("inline runs beside the engine's execution slots", () => {
  test("under fair, a model whose runs are inline is answered while another model's execution holds the engine's one slot", async () => {
    // fair on the serial CPU engine: one execution on the engine at a time (scheduler.maxInFlight 0).
    const w = await start({ concurrency: { dynamicBatching: true }, scheduler: { discipline: "fair" } });
    expect((await model(w, "mlp").prepareInline(1_000_000))?.every((v) => v.inline)).toBe(true);
    const release = await holdDevice(w);
    try {
      const { answer: heavy } = await occupy(w, "cnn");
      const light = await Promise.race([infer(w, "mlp", 1), Bun.sleep(5000).then(() => null)]);
      // Answered on the HTTP thread's engine while the CNN still holds the engine's slot.
      expect(light?.status).toBe(200);
      expect(model(w, "cnn").queueFigures().running).toBe(1);
      release();
      expect((await heavy).status).toBe(200);
    } finally {
      release();
    }
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type StartedWorker, startWorker } from "../src/index.ts";
import { type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "../../../tests/e2e/helpers.ts";
import { FakeBackend, fakePrograms } from "./fake-backend.ts";

let repo: TempRepo;
let worker: StartedWorker;
const logs = collectLogs();
const backend = new FakeBackend();

beforeAll(async () => {
  repo = makeRepo(["mlp", "cnn"]);
  worker = await startWorker({
    env: {},
    repository: repo.repository,
    port: 0,
    backend,
    programs: fakePrograms(backend),
    logger: logs.logger,
    config: { repository: { pollIntervalMs: 50 }, concurrency: { perModel: 1, queueDepth: 1 } },
  });
});

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

describe("startWorker over HTTP (fake engine)", () => {
  test("serves, reports the engine, budget and residency", async () => {
    expect((await fetch(`${worker.url}/v2/health/ready`)).status).toBe(200);
    const info = (await (await fetch(`${worker.url}/v2`)).json()) as Record<string, unknown>;
    expect(JSON.stringify(info)).toContain("budget");
    const meta = (await (await fetch(`${worker.url}/v2/models/mlp`)).json()) as Record<string, unknown>;
    expect(JSON.stringify(meta)).toContain("residency");
    const res = await inferJson(worker.url, "mlp", readReference("mlp").get(1)?.inputs ?? new Map());
    expect(res.status).toBe(200);
    expect(res.outputs.get("logits")?.shape).toEqual([1, 10]);
    const metrics = await (await fetch(`${worker.url}/metrics`)).text();
    expect(metrics).toContain("worker_weight_budget_bytes");
    expect(metrics).toContain('worker_model_weight_bytes{model="mlp"}');
    expect(metrics).toContain("worker_weight_cache_capacity_bytes");
    expect(logs.find("weight budget resolved").length).toBe(1);
    expect(logs.find("engine selected").length).toBe(1);
  });

  test("a full queue answers 429", async () => {
    backend.execDelayMs = 100;
    const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
    const all = await Promise.all([0, 1, 2, 3, 4].map(() => inferJson(worker.url, "mlp", inputs)));
    backend.execDelayMs = 0;
    const statuses = all.map((r) => r.status).sort();
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);
    const full = all.find((r) => r.status === 429);
    expect(String(full?.body.error)).toContain("queue is full");
  });
});

describe("repository index (fake engine)", () => {
  test("carries each model's memory figures and the budget", async () => {
    const res = await fetch(`${worker.url}/v2/repository/index`, { method: "POST", body: "{}" });
    const entries = (await res.json()) as Array<{ name: string; extra?: Record<string, unknown> }>;
    const mlp = entries.find((e) => e.name === "mlp");
    expect(mlp?.extra?.residency).toBe("device");
    expect(mlp?.extra?.weightBytes).toBeGreaterThan(0);
    expect(mlp?.extra?.scratchBytes).toBeGreaterThan(0);
    expect(((mlp?.extra?.budget ?? {}) as Record<string, number>).poolBytes).toBeGreaterThan(0);
  });
});

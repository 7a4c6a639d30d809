/**
 * The statistics extension and /metrics tell one story: every answered request counted once
 * (failures too, wherever they failed), counts that survive a reload, batch_stats filled, and the
 * same figures under ReactantServer's worker_* names, Triton's nv_inference_* names and the
 * process metrics, so both projects' dashboards work.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { parseExposition } from "../../packages/server/test/support/exposition.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { PROCESS_NAMES, REACTANT_SERVER_NAMES } from "./reactant-server-names.ts";
import { type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "./helpers.ts";

const TRITON_NAMES = [
  "nv_inference_request_success",
  "nv_inference_request_failure",
  "nv_inference_count",
  "nv_inference_exec_count",
  "nv_inference_request_duration_us",
  "nv_inference_queue_duration_us",
  "nv_inference_compute_input_duration_us",
  "nv_inference_compute_infer_duration_us",
  "nv_inference_compute_output_duration_us",
  "nv_inference_pending_request_count",
];

let repo: TempRepo;
let worker: StartedWorker;
beforeAll(async () => {
  repo = makeRepo(["mlp"]);
  worker = await startCpuWorker(
    repo,
    collectLogs().logger,
    { repository: { dynamic: false }, server: { authToken: "tok" } },
    { inlineMaxUs: 0 },
  );
});
afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

// biome-ignore lint/suspicious/noExplicitAny: the stats JSON is probed by shape
async function mlpStats(): Promise<any> {
  const body = (await (await fetch(`${worker.url}/v2/models/mlp/stats`)).json()) as { model_stats: unknown[] };
  return body.model_stats[0];
}

async function scrape() {
  return parseExposition(await (await fetch(`${worker.url}/metrics`)).text());
}

async function badRequest(): Promise<number> {
  const r = await fetch(`${worker.url}/v2/models/mlp/infer`, {
    method: "POST",
    body: '{"inputs":[{"name":"features","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}',
  });
  return r.status;
}

describe("statistics and /metrics from one source", () => {
  test("successes and failures are counted alike in both, and survive a reload", async () => {
    const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
    for (let i = 0; i < 5; i++) expect((await inferJson(worker.url, "mlp", inputs)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect(await badRequest()).toBe(400);

    const s = await mlpStats();
    expect(s.inference_stats.success.count).toBe(5);
    expect(s.inference_stats.fail.count).toBe(3);
    expect(s.inference_count).toBe(5);
    expect(s.execution_count).toBe(5);
    // Triton's batch_stats: one entry per executed batch size.
    expect(s.batch_stats).toEqual([
      expect.objectContaining({ batch_size: 1, compute_infer: expect.objectContaining({ count: 5 }) }),
    ]);

    const m = await scrape();
    expect(m.value("nv_inference_request_success", { model: "mlp" })).toBe(5);
    expect(m.value("nv_inference_request_failure", { model: "mlp" })).toBe(3);
    expect(m.value("nv_inference_count", { model: "mlp" })).toBe(5);
    expect(m.value("nv_inference_exec_count", { model: "mlp" })).toBe(5);
    expect(m.value("worker_requests_total", { model: "mlp", status: "200" })).toBe(5);
    expect(m.value("worker_requests_total", { model: "mlp", status: "400" })).toBe(3);
    expect(m.value("worker_dispatch_total", { model: "mlp" })).toBe(5);
    expect(m.value("worker_rows_served_total", { model: "mlp" })).toBe(5);
    // The request durations are the stats' nanoseconds, in microseconds.
    const us = m.value("nv_inference_request_duration_us", { model: "mlp" }) ?? 0;
    const ns = s.inference_stats.success.ns + s.inference_stats.fail.ns;
    expect(Math.abs(us - ns / 1000)).toBeLessThan(1);

    // A reload swaps in a new version of the model: its figures carry on.
    const reload = await fetch(`${worker.url}/v2/repository/models/mlp/load`, {
      method: "POST",
      headers: { authorization: "Bearer tok" },
    });
    expect(reload.status).toBe(200);
    expect((await inferJson(worker.url, "mlp", inputs)).status).toBe(200);
    const after = await mlpStats();
    expect(after.inference_stats.success.count).toBe(6);
    expect(after.inference_stats.fail.count).toBe(3);
    expect(after.inference_count).toBe(6);
    expect(after.execution_count).toBeGreaterThanOrEqual(6); // the reload's warm-up runs may count
    const m2 = await scrape();
    expect(m2.value("nv_inference_request_success", { model: "mlp" })).toBe(6);
  }, 120_000);

  // ReactantServer's names, each with a sample and its memory figures checked: reactant-server-metrics.test.ts.
  test("every ReactantServer worker name, Triton's nv_inference_* names and process metrics are exported", async () => {
    const { types } = await scrape();
    const missing = [...REACTANT_SERVER_NAMES, ...TRITON_NAMES, ...PROCESS_NAMES].filter((n) => !types.has(n));
    expect(missing).toEqual([]);
    expect(types.get("worker_request_latency_seconds")).toBe("histogram");
    expect(types.get("nv_inference_request_success")).toBe("counter");
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { parseExposition } from "./support/exposition.ts";
import { type Json, postJson, startHarness } from "./support/harness.ts";

const h = startHarness();
afterAll(() => h.stop());

describe("statistics extension", () => {
  test("per-model stats in Triton's shape, counting inferences by batch", async () => {
    const x = { name: "x", shape: [3, 4], datatype: "FP32", data: new Array(12).fill(1) };
    for (let i = 0; i < 2; i++)
      expect((await postJson(`${h.url}/v2/models/affine/infer`, { inputs: [x] })).status).toBe(200);
    const r = await fetch(`${h.url}/v2/models/affine/stats`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as Json;
    expect(body.model_stats).toHaveLength(1);
    const s = body.model_stats[0];
    expect(s).toMatchObject({ name: "affine", version: "1", inference_count: 6, execution_count: 2, batch_stats: [] });
    expect(s.last_inference).toBeGreaterThan(Date.now() - 60_000);
    expect(s.inference_stats.success.count).toBe(2);
    expect(s.inference_stats.success.ns).toBeGreaterThan(0);
    for (const key of [
      "fail",
      "queue",
      "compute_input",
      "compute_infer",
      "compute_output",
      "cache_hit",
      "cache_miss",
    ]) {
      expect(Object.keys(s.inference_stats[key])).toEqual(["count", "ns"]);
    }
  });

  test("all models and versioned stats; unknown is 404", async () => {
    const all = (await (await fetch(`${h.url}/v2/models/stats`)).json()) as Json;
    const names = all.model_stats.map((s: { name: string }) => s.name);
    expect(names).toContain("affine");
    expect(names).toContain("echo_fp16");
    expect(names).not.toContain("broken");
    expect((await fetch(`${h.url}/v2/models/affine/versions/1/stats`)).status).toBe(200);
    expect((await fetch(`${h.url}/v2/models/affine/versions/2/stats`)).status).toBe(404);
    expect((await fetch(`${h.url}/v2/models/ghost/stats`)).status).toBe(404);
  });
});

describe("/metrics", () => {
  test("Prometheus text with the request, memory, weight-cache and program-cache series", async () => {
    h.metrics.deviceMemoryInUse.set({ device: "0" }, 1234);
    h.metrics.weightLoads.inc({ model: "affine" });
    h.metrics.cacheHits.inc({ model: "affine" }, 2);
    let scraped = 0;
    h.metrics.onScrape(() => {
      scraped++;
      h.metrics.deviceMemoryPeak.set({ device: "0" }, 4321);
    });
    await postJson(`${h.url}/v2/models/affine/infer`, {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
    });
    await postJson(`${h.url}/v2/models/affine/infer`, {
      inputs: [{ name: "x", shape: [1, 3], datatype: "FP32", data: [1, 2, 3] }],
    });
    const r = await fetch(`${h.url}/metrics`);
    expect(r.headers.get("content-type")).toContain("text/plain");
    const { samples, types } = parseExposition(await r.text());
    const value = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(scraped).toBe(1);
    expect(value("worker_requests_total", { model: "affine", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(value("worker_requests_total", { model: "affine", status: "400" })).toBe(1);
    expect(value("worker_request_latency_seconds_count", { model: "affine" })).toBeGreaterThanOrEqual(2);
    expect(value("worker_request_latency_seconds_bucket", { model: "affine", le: "+Inf" })).toBeGreaterThanOrEqual(2);
    expect(value("worker_device_memory_in_use_bytes", { device: "0" })).toBe(1234);
    expect(value("worker_device_memory_peak_bytes", { device: "0" })).toBe(4321);
    expect(value("worker_weight_loads_total", { model: "affine" })).toBe(1);
    expect(value("xlaserve_cache_hits_total", { model: "affine" })).toBe(2);
    expect(types.get("worker_request_latency_seconds")).toBe("histogram");
    for (const name of [
      "worker_queue_depth",
      "worker_compute_seconds_total",
      "worker_device_memory_limit_bytes",
      "worker_weight_cache_capacity_bytes",
      "worker_weight_cache_used_bytes",
      "worker_weight_evicts_total",
      "xlaserve_cache_misses_total",
      "xlaserve_cache_compiles_total",
      "xlaserve_cache_loads_total",
    ]) {
      expect(types.has(name)).toBe(true);
    }
  });
});

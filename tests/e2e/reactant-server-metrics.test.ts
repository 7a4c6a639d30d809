/**
 * A real CPU worker's /metrics carries every ReactantServer.jl worker series with a sample, and
 * the memory figures agree with the worker's own: the weight budget the status page shows
 * (/status.json), the models' figures in the repository index, and one another (free = limit -
 * in use, out of pool = process used - pool, ...). What each figure means on the CPU engine is
 * in apps/worker/src/memory/device-memory-figures.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { parseExposition } from "../../packages/server/test/support/exposition.ts";
import type { StatusSnapshot } from "../../packages/server/src/status/snapshot.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "./helpers.ts";
import { PROCESS_NAMES, REACTANT_SERVER_NAMES } from "./reactant-server-names.ts";

let repo: TempRepo;
let worker: StartedWorker;
beforeAll(async () => {
  repo = makeRepo(["mlp", "cnn"]);
  worker = await startCpuWorker(repo, collectLogs().logger, { repository: { dynamic: false } }, { inlineMaxUs: 0 });
  for (const model of ["mlp", "cnn"]) {
    const inputs = readReference(model).get(1)?.inputs ?? new Map();
    for (let i = 0; i < 3; i++) expect((await inferJson(worker.url, model, inputs)).status).toBe(200);
  }
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

async function look() {
  const metrics = parseExposition(await (await fetch(`${worker.url}/metrics`)).text());
  const status = (await (await fetch(`${worker.url}/status.json`)).json()) as StatusSnapshot;
  return { metrics, status };
}

describe("ReactantServer's worker series on a real worker", () => {
  test("every name is exported with at least one sample", async () => {
    const { metrics } = await look();
    const sampled = new Set(metrics.samples.map((s) => s.name));
    const missing = [...REACTANT_SERVER_NAMES, ...PROCESS_NAMES].filter((name) =>
      metrics.types.get(name) === "histogram" ? !sampled.has(`${name}_count`) : !sampled.has(name),
    );
    expect(missing).toEqual([]);
  });

  test("the weight-budget series are the budget the status page shows", async () => {
    const { metrics, status } = await look();
    const b = status.budget;
    expect(b).not.toBeNull();
    if (!b) return;
    const m = (name: string) => metrics.value(name, { device: "0" });
    expect(m("worker_weight_pool_bytes")).toBe(b.poolBytes);
    expect(m("worker_weight_cache_pinned_bytes")).toBe(b.pinnedBytes);
    expect(m("worker_weight_cache_max_bytes")).toBe(b.onDemandBytes);
    expect(m("worker_weight_cache_max_scratch_bytes")).toBe(b.maxScratchBytes);
    expect(m("worker_weight_cache_resident_bytes")).toBe(b.residentOnDemandBytes);
    // The CPU engine's device is host memory: its limit is the budget's.
    expect(m("worker_device_memory_limit_bytes")).toBe(b.limitBytes);
    expect(b.maxScratchBytes).toBeGreaterThan(0); // measured by the probe, not a default

    const ready = status.models.filter((x) => x.state === "READY");
    expect(metrics.value("worker_models_loaded")).toBe(ready.length);
    for (const model of ready) {
      expect(metrics.value("worker_model_weight_bytes", { model: model.name })).toBe(model.weightBytes as number);
      expect(metrics.value("worker_model_resident", { model: model.name })).toBe(model.resident ? 1 : 0);
    }
    const resident = ready.filter((x) => x.resident);
    expect(metrics.value("worker_models_resident")).toBe(resident.length);
    expect(metrics.value("worker_resident_weight_bytes", { device: "0" })).toBe(
      resident.reduce((a, x) => a + (x.weightBytes ?? 0), 0),
    );
  });

  test("the device-memory series agree with one another and with the process", async () => {
    const { metrics } = await look();
    const m = (name: string) => metrics.value(name, { device: "0" }) as number;
    const inUse = m("worker_device_memory_in_use_bytes");
    const limit = m("worker_device_memory_limit_bytes");
    const pool = m("worker_device_memory_pool_bytes");
    const used = m("worker_device_memory_process_used_bytes");
    // Resident weights live in the engine's arena.
    expect(inUse).toBeGreaterThanOrEqual(metrics.value("worker_resident_weight_bytes", { device: "0" }) as number);
    expect(m("worker_device_memory_peak_in_use_bytes")).toBeGreaterThanOrEqual(inUse);
    expect(m("worker_device_memory_free_bytes")).toBe(Math.max(0, limit - inUse));
    // Paged host memory: all that is free is one block.
    expect(m("worker_device_memory_largest_free_block_bytes")).toBe(m("worker_device_memory_free_bytes"));
    expect(m("worker_device_memory_fragmentation_ratio")).toBe(1);
    // The arena holds its live buffers and those it keeps for reuse.
    expect(pool).toBeGreaterThanOrEqual(inUse);
    // Process used is the resident set, read in the same scrape as prom-client's.
    const rss = metrics.value("process_resident_memory_bytes") as number;
    expect(Math.abs(used - rss) / rss).toBeLessThan(0.2);
    expect(m("worker_device_memory_out_of_pool_bytes")).toBe(Math.max(0, used - pool));
  });
});

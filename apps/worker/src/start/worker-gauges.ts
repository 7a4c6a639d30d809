import type { FleetCounters } from "@xlaserve/cache";
import type { AbstractBackend } from "@xlaserve/core";
import type { Metrics } from "@xlaserve/server";
import type { HttpModules } from "../http/http-modules.ts";
import type { ModelRegistry } from "../repository/registry.ts";
import type { CacheHolder } from "./cache-holder.ts";

/** The worker's own series beside the server's: the weight budget and per-model memory figures. */
export function workerGauges(metrics: Metrics, Counter: HttpModules["Counter"], Gauge: HttpModules["Gauge"]) {
  const registers = [metrics.registry];
  // Most figures are one gauge series per model.
  const perModel = (name: string, help: string) => new Gauge({ name, help, labelNames: ["model"] as const, registers });
  const labelled = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Gauge({ name, help, labelNames, registers });
  return {
    budget: labelled(
      "worker_weight_budget_bytes",
      "The resolved weight budget: limit, pool, on_demand, pinned, max_scratch",
      ["device", "figure"] as const,
    ),
    residentWeights: labelled(
      "worker_resident_weight_bytes",
      "Weight bytes resident on the device (pinned and on-demand)",
      ["device"] as const,
    ),
    modelWeight: perModel("worker_model_weight_bytes", "Per-model weight footprint (bytes)"),
    modelScratch: perModel("worker_model_scratch_bytes", "Per-model run scratch measured by the memory probe (bytes)"),
    modelResident: perModel("worker_model_resident", "1 if the model's weights are device-resident, else 0"),
    modelPinned: perModel("worker_model_pinned", "1 if the model is pinned, else 0"),
    modelsLoaded: new Gauge({ name: "worker_models_loaded", help: "Number of loaded models", registers }),
    fleetPrograms: labelled(
      "worker_fleet_programs",
      "Programs by what the fleet cache did since start: fetched (loaded from the shared store), published (compiled here), bad_blob (failed its checks, dropped), lease_wait, takeover (of a dead holder's lease), unavailable (compiled without the fleet)",
      ["event"] as const,
    ),
    cacheDegraded: new Gauge({
      name: "xlaserve_cache_degraded",
      help: "1 while the program cache cannot be used (its state directory's disk is full or unwritable) and programs compile uncached",
      registers,
    }),
    cacheWriteFailures: new Gauge({
      name: "xlaserve_cache_write_failures",
      help: "Programs that could not be stored in the program cache (full or unwritable disk) and were served uncached",
      registers,
    }),
    // The device scheduler's figures per model, set on scrape from its counters.
    waitSeconds: perModel(
      "worker_scheduler_wait_seconds_total",
      "Time requests waited in the scheduler's queue before their execution started (seconds, summed)",
    ),
    dispatched: perModel("worker_scheduler_dispatched_total", "Requests the scheduler sent to the device"),
    executions: perModel(
      "worker_scheduler_executions_total",
      "Executions the scheduler ran (several requests each when coalesced)",
    ),
    batchFill: perModel(
      "worker_scheduler_batch_fill_ratio",
      "Rows run over rows the executions' compiled batch sizes held (1: no padding)",
    ),
    shed: labelled(
      "worker_scheduler_shed_total",
      "Requests refused or dropped instead of run: queue_full (429), deadline and laxity (504), aborted",
      ["model", "reason"] as const,
    ),
    // Set on scrape from the backend's own count (a gauge: the count is the backend's, not ours).
    engineInputBytes: labelled(
      "worker_engine_input_bytes_total",
      "Input bytes handed to the engine's thread: moved (transferred, no copy) or copied on the way",
      ["how"] as const,
    ),
    weightLoadSeconds: new Counter({
      name: "worker_weight_load_seconds_total",
      help: "Cumulative time spent loading weights to the device (seconds)",
      labelNames: ["model"] as const,
      registers,
    }),
  };
}

export type WorkerGauges = ReturnType<typeof workerGauges>;

/** Sets the budget, cache and per-model figures on every scrape (device memory: device-memory-series.ts). */
export function scrapeWorkerFigures(
  metrics: Metrics,
  extra: WorkerGauges,
  registry: ModelRegistry,
  fleet: FleetCounters | null = null,
  cache: CacheHolder | null = null,
  backend: Pick<AbstractBackend, "inputHandover"> | null = null,
): void {
  const handover = backend?.inputHandover?.();
  if (handover) {
    extra.engineInputBytes.set({ how: "moved" }, handover.movedBytes);
    extra.engineInputBytes.set({ how: "copied" }, handover.copiedBytes);
  }
  if (fleet) {
    extra.fleetPrograms.set({ event: "fetched" }, fleet.fetches);
    extra.fleetPrograms.set({ event: "published" }, fleet.publishes);
    extra.fleetPrograms.set({ event: "bad_blob" }, fleet.badBlobs);
    extra.fleetPrograms.set({ event: "lease_wait" }, fleet.leaseWaits);
    extra.fleetPrograms.set({ event: "takeover" }, fleet.takeovers);
    extra.fleetPrograms.set({ event: "unavailable" }, fleet.unavailable);
  }
  const dev = String(0);
  if (cache) {
    extra.cacheDegraded.set(cache.degraded ? 1 : 0);
    extra.cacheWriteFailures.set(cache.writeFailures);
  }
  const b = registry.currentBudget();
  metrics.weightCacheUsed.set({ device: dev }, registry.weights.residentOnDemandBytes);
  if (b) {
    metrics.weightCacheCapacity.set({ device: dev }, b.onDemandBytes);
    extra.budget.set({ device: dev, figure: "limit" }, b.limitBytes);
    extra.budget.set({ device: dev, figure: "pool" }, b.poolBytes);
    extra.budget.set({ device: dev, figure: "on_demand" }, b.onDemandBytes);
    extra.budget.set({ device: dev, figure: "pinned" }, b.pinnedBytes);
    extra.budget.set({ device: dev, figure: "max_scratch" }, b.maxScratchBytes);
  }
  extra.residentWeights.set({ device: dev }, registry.weights.residentBytes);
  extra.modelWeight.reset();
  extra.modelScratch.reset();
  extra.modelResident.reset();
  extra.modelPinned.reset();
  for (const m of registry.models()) {
    const e = m.extra();
    extra.modelWeight.set({ model: m.name }, m.weightBytes);
    extra.modelScratch.set({ model: m.name }, m.scratchBytes);
    extra.modelResident.set({ model: m.name }, e.resident ? 1 : 0);
    extra.modelPinned.set({ model: m.name }, m.residency === "pinned" ? 1 : 0);
  }
  extra.modelsLoaded.set(registry.models().length);
  extra.waitSeconds.reset();
  extra.dispatched.reset();
  extra.executions.reset();
  extra.batchFill.reset();
  extra.shed.reset();
  for (const m of registry.models()) {
    const q = m.queueFigures();
    const model = m.name;
    metrics.setQueueDepth(model, q.queued);
    extra.waitSeconds.set({ model }, ((q.meanWaitMs ?? 0) * q.dispatched) / 1000);
    extra.dispatched.set({ model }, q.dispatched);
    extra.executions.set({ model }, q.executions);
    if (q.batchFill !== null) extra.batchFill.set({ model }, q.batchFill);
    extra.shed.set({ model, reason: "queue_full" }, q.shed.queueFull);
    extra.shed.set({ model, reason: "deadline" }, q.shed.deadline);
    extra.shed.set({ model, reason: "laxity" }, q.shed.laxity);
    extra.shed.set({ model, reason: "aborted" }, q.shed.aborted);
  }
}

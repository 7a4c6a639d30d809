import { hostname } from "node:os";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { Metrics } from "@xlaserve/server";
import type { HttpModules } from "../http/http-modules.ts";
import type { ModelRegistry } from "../repository/registry.ts";

/**
 * The rest of ReactantServer.jl's worker series under its names (worker_weight_cache_*,
 * worker_weight_pool_bytes, worker_models_resident, worker_info, the admission gauges; the
 * worker_device_memory_* ones are device-memory-series.ts's), so its Grafana dashboards work
 * against this worker unchanged. Sampled at scrape time from the registry and the budget.
 */
export function registerReactantServerSeries(
  metrics: Metrics,
  Gauge: HttpModules["Gauge"],
  source: {
    readonly registry: ModelRegistry;
    readonly config: Config;
    /**
     * Requests being answered now, once the servers listen: the HTTP server's (the scrape itself
     * included) and the gRPC calls (a ModelStreamInfer stream counts until it ends).
     */
    readonly pendingRequests: () => number;
  },
): void {
  const registers = [metrics.registry];
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers });
  const device = { device: "0" };
  const cacheResident = gauge("worker_weight_cache_resident_bytes", "On-demand weight bytes resident on the device", [
    "device",
  ]);
  const cacheMax = gauge("worker_weight_cache_max_bytes", "The on-demand weight budget (bytes)", ["device"]);
  const cachePinned = gauge("worker_weight_cache_pinned_bytes", "Pinned weight bytes reserved off the weight pool", [
    "device",
  ]);
  const cacheScratch = gauge(
    "worker_weight_cache_max_scratch_bytes",
    "The largest measured run scratch, kept free as headroom (bytes)",
    ["device"],
  );
  const pool = gauge("worker_weight_pool_bytes", "Bytes allotted to all weights, pinned and on-demand", ["device"]);
  const resident = gauge("worker_models_resident", "Models whose weights are resident on the device");
  const inflight = gauge(
    "worker_inflight_requests",
    "Requests being answered now over HTTP and gRPC (this scrape excluded)",
  );
  const maxConcurrent = gauge(
    "worker_max_concurrent_requests",
    "Executions on the device at once across models (scheduler.maxInFlight; 0: no worker-wide cap, see concurrency.perModel)",
  );
  const info = gauge("worker_info", "Worker identity and configuration (always 1)", [
    "worker",
    "device_ordinal",
    "control_mode",
    "discipline",
    "residency_mode",
  ]);
  const { registry, config } = source;
  info.set(
    {
      worker: hostname(),
      device_ordinal: "0",
      control_mode: config.repository.dynamic ? "poll" : "none",
      discipline: config.scheduler.discipline,
      residency_mode: config.memory.defaultResidency,
    },
    1,
  );
  const deviceBound = registry.scheduler.options.maxInFlight;
  maxConcurrent.set(Number.isFinite(deviceBound) ? deviceBound : 0);
  metrics.onScrape(() => {
    const b = registry.currentBudget();
    cacheResident.set(device, registry.weights.residentOnDemandBytes);
    if (b) {
      cacheMax.set(device, b.onDemandBytes);
      cachePinned.set(device, b.pinnedBytes);
      cacheScratch.set(device, b.maxScratchBytes);
      pool.set(device, b.poolBytes);
    }
    resident.set(registry.models().filter((m) => m.extra().resident).length);
    inflight.set(Math.max(0, source.pendingRequests() - 1));
  });
}

import type { AbstractBackend, Logger } from "@xlaserve/core";
import type { Metrics } from "@xlaserve/server";
import type { HttpModules } from "../http/http-modules.ts";
import { type DeviceMemoryFigures, deviceMemoryFigures } from "../memory/device-memory-figures.ts";
import { NvidiaSmiMemory, type ProcessDeviceMemory, residentSet, unmeasured } from "../memory/process-device-memory.ts";
import type { ModelRegistry } from "../repository/registry.ts";

/**
 * Every worker_device_memory_* series of ReactantServer.jl (in use, limit, free, peak, pool,
 * largest free block, fragmentation, process used, out of pool), sampled on each scrape from the
 * backend, the weight budget and the process (memory/device-memory-figures.ts says what each
 * means per engine). A figure nothing measures has no sample.
 */
export function registerDeviceMemorySeries(
  metrics: Metrics,
  Gauge: HttpModules["Gauge"],
  source: { readonly registry: ModelRegistry; readonly backend: AbstractBackend; readonly log: Logger },
): void {
  const registers = [metrics.registry];
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ["device"], registers });
  const series = {
    free: gauge("worker_device_memory_free_bytes", "Device bytes free to allocate (limit - in use)"),
    peak: gauge("worker_device_memory_peak_in_use_bytes", "Peak device bytes in use since the last reset"),
    pool: gauge("worker_device_memory_pool_bytes", "Bytes the allocator holds for its pool (claimed from the device)"),
    largestFree: gauge(
      "worker_device_memory_largest_free_block_bytes",
      "Largest contiguous free block (bytes); host memory: all that is free",
    ),
    fragmentation: gauge(
      "worker_device_memory_fragmentation_ratio",
      "Largest free block / total free (1.0 = unfragmented)",
    ),
    processUsed: gauge(
      "worker_device_memory_process_used_bytes",
      "Device bytes this process holds per the driver (nvidia-smi); host memory: the resident set",
    ),
    outOfPool: gauge(
      "worker_device_memory_out_of_pool_bytes",
      "Process used minus the allocator's pool (CUDA context, modules, command buffers; host: JS heap, code, files)",
    ),
  };
  const { registry, backend } = source;
  const identity = backend.identity();
  const host = backend.name === "reactant" || identity.platform === "cpu";
  const processMemory: ProcessDeviceMemory = host
    ? residentSet
    : identity.platform === "cuda"
      ? new NvidiaSmiMemory(source.log)
      : unmeasured;

  const figures = async (): Promise<DeviceMemoryFigures | null> => {
    let stats: ReturnType<AbstractBackend["memoryStats"]>;
    try {
      stats = backend.memoryStats();
    } catch {
      return null; // a disposed backend during shutdown
    }
    return deviceMemoryFigures({
      stats,
      host,
      budgetLimitBytes: registry.currentBudget()?.limitBytes ?? null,
      processUsedBytes: await processMemory.sample(),
    });
  };

  const device = { device: "0" };
  const set = (g: { set(l: typeof device, v: number): void; reset(): void }, v: number | null) => {
    g.reset();
    if (v !== null) g.set(device, v);
  };
  metrics.onScrape(async () => {
    const f = await figures();
    if (!f) return;
    metrics.deviceMemoryInUse.set(device, f.inUseBytes);
    metrics.deviceMemoryPeak.set(device, f.peakInUseBytes);
    set(metrics.deviceMemoryLimit, f.limitBytes);
    set(series.peak, f.peakInUseBytes);
    set(series.free, f.freeBytes);
    set(series.pool, f.poolBytes);
    set(series.largestFree, f.largestFreeBlockBytes);
    set(series.fragmentation, f.fragmentationRatio);
    set(series.processUsed, f.processUsedBytes);
    set(series.outOfPool, f.outOfPoolBytes);
  });
}

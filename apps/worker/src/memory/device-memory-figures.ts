import type { MemoryStats } from "@xlaserve/core";

/**
 * The device-memory figures ReactantServer.jl's worker exports (worker_device_memory_*), from
 * what the backend reports, the weight budget and the process's own footprint. Null: nothing
 * measures it here, so the series has no sample (never a made-up value).
 *
 * What each means on the two kinds of device:
 * - an accelerator (PJRT): the plugin allocator's figures (PJRT_Device_MemoryStats); process
 *   used is what the driver says this process holds (nvidia-smi on CUDA), out of pool the part
 *   outside the allocator's pool (CUDA context, loaded modules, command buffers).
 * - host memory (the CPU engine, or a PJRT CPU plugin): the engine's arena; the limit is the
 *   weight budget's (memory.limitBytes, else the machine's memory); paged memory has no
 *   fragmentation, so the largest free block is all that is free; process used is the resident
 *   set, out of pool what the process holds beside the arena (the JavaScript heap, code, files).
 */
export interface DeviceMemoryFigures {
  readonly inUseBytes: number;
  readonly peakInUseBytes: number;
  readonly limitBytes: number | null;
  readonly freeBytes: number | null;
  readonly poolBytes: number | null;
  readonly largestFreeBlockBytes: number | null;
  /** Largest free block over free (1: unfragmented). */
  readonly fragmentationRatio: number | null;
  readonly processUsedBytes: number | null;
  readonly outOfPoolBytes: number | null;
}

export function deviceMemoryFigures(input: {
  readonly stats: MemoryStats;
  /** The device is host memory (the CPU engine or a PJRT CPU plugin). */
  readonly host: boolean;
  /** The resolved weight budget's limit, if one was resolved. */
  readonly budgetLimitBytes: number | null;
  /** Bytes this process holds on the device (driver) or in host memory (resident set). */
  readonly processUsedBytes: number | null;
}): DeviceMemoryFigures {
  const { stats, host, processUsedBytes } = input;
  const limitBytes = stats.limitBytes ?? (host ? input.budgetLimitBytes : null);
  const freeBytes = limitBytes === null ? null : Math.max(0, limitBytes - stats.inUseBytes);
  const poolBytes = stats.poolBytes ?? null;
  const largestFreeBlockBytes = stats.largestFreeBlockBytes ?? (host ? freeBytes : null);
  const fragmentationRatio =
    freeBytes === null || largestFreeBlockBytes === null ? null : freeBytes > 0 ? largestFreeBlockBytes / freeBytes : 1;
  // ReactantServer takes the arena as preallocated (its limit); the pool is what it claimed.
  const arena = poolBytes ?? limitBytes;
  return {
    inUseBytes: stats.inUseBytes,
    peakInUseBytes: stats.peakBytes,
    limitBytes,
    freeBytes,
    poolBytes,
    largestFreeBlockBytes,
    fragmentationRatio,
    processUsedBytes,
    outOfPoolBytes: processUsedBytes === null || arena === null ? null : Math.max(0, processUsedBytes - arena),
  };
}

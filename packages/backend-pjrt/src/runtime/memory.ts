import type { MemoryStats } from "@xlaserve/core";
import { CStruct } from "../abi/cstruct.ts";
import { PJRT_Device_ClearMemoryStats_Args, PJRT_Device_MemoryStats_Args } from "../abi/structs.ts";
import type { PjrtClient } from "./client.ts";

/**
 * PJRT_Device_MemoryStats: in use, peak (falls back to in use where unset), the limit, and the
 * pool and largest free block where the plugin's allocator sets them (XLA's BFC allocator does).
 */
export function deviceMemoryStats(client: PjrtClient, device = 0): MemoryStats {
  const args = new CStruct(PJRT_Device_MemoryStats_Args, { device: client.device(device).handle });
  client.api.call("PJRT_Device_MemoryStats", args);
  const inUse = args.get("bytes_in_use");
  return {
    inUseBytes: inUse,
    peakBytes: args.getBool("peak_bytes_in_use_is_set") ? args.get("peak_bytes_in_use") : inUse,
    limitBytes: args.getBool("bytes_limit_is_set") ? args.get("bytes_limit") : null,
    ...(args.getBool("pool_bytes_is_set") ? { poolBytes: args.get("pool_bytes") } : {}),
    ...(args.getBool("largest_free_block_bytes_is_set")
      ? { largestFreeBlockBytes: args.get("largest_free_block_bytes") }
      : {}),
  };
}

/** PJRT_Device_ClearMemoryStats: the peak mark drops to what is in use now (ARCHITECTURE rule 5). */
export function clearMemoryStats(client: PjrtClient, device = 0): void {
  client.api.call(
    "PJRT_Device_ClearMemoryStats",
    new CStruct(PJRT_Device_ClearMemoryStats_Args, { device: client.device(device).handle }),
  );
}

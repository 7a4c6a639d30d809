/**
 * The weight budget (issue 7), ReactantServer's formula (runtime/weight_cache.jl `weight_budget`).
 * The device arena holds, at the worst instant, pinned weights + on-demand weights + one model's
 * run scratch + a `wiggle` share of slack:
 *
 *     scratchCeiling = (1 - wiggle) x limit
 *     pool           = max(0, min(fraction x limit, scratchCeiling - maxScratch))   pinned + on-demand
 *     onDemand       = clamp(pool - pinnedBytes, 0, pool)
 *
 * Pure arithmetic: no device access.
 */

export interface BudgetInputs {
  /** Usable device memory (bytes); on the CPU engine a configured host limit or the machine's memory. */
  readonly limitBytes: number;
  /** Share of the limit weights may take (0..1]. */
  readonly fraction: number;
  /** Share of the limit kept free as slack (0..1). */
  readonly wiggle: number;
  /** Largest measured run scratch of any loaded model (bytes). */
  readonly maxScratchBytes: number;
  /** Weights of pinned models (bytes). */
  readonly pinnedBytes: number;
}

export interface WeightBudget extends BudgetInputs {
  readonly scratchCeilingBytes: number;
  /** Bytes all weights (pinned + on-demand) may take. */
  readonly poolBytes: number;
  /** Bytes the LRU-managed (device residency) weights may take. */
  readonly onDemandBytes: number;
  /** Pinned weights alone exceed the pool: an over-commit no eviction can fix. */
  readonly pinnedOverCommit: boolean;
}

export function computeWeightBudget(inputs: BudgetInputs): WeightBudget {
  const limit = Math.max(0, Math.floor(inputs.limitBytes));
  const scratchCeilingBytes = Math.floor((1 - inputs.wiggle) * limit);
  const poolBytes = Math.max(
    0,
    Math.min(Math.floor(inputs.fraction * limit), scratchCeilingBytes - Math.floor(inputs.maxScratchBytes)),
  );
  const onDemandBytes = Math.min(poolBytes, Math.max(0, poolBytes - inputs.pinnedBytes));
  return {
    ...inputs,
    limitBytes: limit,
    scratchCeilingBytes,
    poolBytes,
    onDemandBytes,
    pinnedOverCommit: inputs.pinnedBytes > poolBytes,
  };
}

export type Residency = "pinned" | "device" | "host";
export const RESIDENCIES: readonly Residency[] = ["pinned", "device", "host"];

export function isResidency(value: unknown): value is Residency {
  return value === "pinned" || value === "device" || value === "host";
}

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

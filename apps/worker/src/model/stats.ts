import type { ModelStats } from "@xlaserve/server/contract.ts";

/** A model's statistics as the worker counts them (ModelStats, writable). */
export type MutableStats = {
  -readonly [K in keyof ModelStats]: ModelStats[K] extends number ? number : { count: number; ns: number };
};

const TIMED = ["success", "fail", "queue", "computeInput", "computeInfer", "computeOutput"] as const;

export function zeroStats(): MutableStats {
  return {
    inferenceCount: 0,
    executionCount: 0,
    lastInference: 0,
    success: { count: 0, ns: 0 },
    fail: { count: 0, ns: 0 },
    queue: { count: 0, ns: 0 },
    computeInput: { count: 0, ns: 0 },
    computeInfer: { count: 0, ns: 0 },
    computeOutput: { count: 0, ns: 0 },
  };
}

/** A copy, so later counting does not change what was handed out. */
export function copyStats(s: ModelStats): MutableStats {
  const out = { ...s } as MutableStats;
  for (const key of TIMED) out[key] = { count: s[key].count, ns: s[key].ns };
  return out;
}

/** Adds `d` (another thread's figures for the same model) into `into`. */
export function addStats(into: MutableStats, d: ModelStats): void {
  into.inferenceCount += d.inferenceCount;
  into.executionCount += d.executionCount;
  into.lastInference = Math.max(into.lastInference, d.lastInference);
  for (const key of TIMED) {
    into[key].count += d[key].count;
    into[key].ns += d[key].ns;
  }
}

import type { Op, Region } from "@xlaserve/stablehlo";
import { comparatorKey, keyRegion } from "../kernels/heavy/comparator-key.ts";
import type { Kernel, Step } from "./types.ts";

/** A sort kernel that may be told only the first `sortedPrefix` positions of each line are read. */
export interface PrefixSortKernel extends Kernel {
  sortedPrefix?: number;
}

/**
 * Sorts whose every result is read only through slices of the first K positions along the sorted
 * dimension (top_k as JAX lowers it: a full sort, then slices [0:k]) need only those K in order:
 * their kernel is told K, and selects instead of sorting everything.
 */
export function markSortedPrefixes(steps: Step[], stepUses: number[][], resultSlots: number[]): void {
  let results: Set<number> | null = null;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as Step;
    if (step.op.name !== "stablehlo.sort") continue;
    results ??= new Set(resultSlots);
    const prefix = sortedPrefix(steps, stepUses, i, results);
    if (prefix > 0) (step.kernel as PrefixSortKernel).sortedPrefix = prefix;
  }
}

function sortedPrefix(steps: Step[], stepUses: number[][], i: number, results: Set<number>): number {
  const step = steps[i] as Step;
  const outs = new Set(step.outputs);
  if (step.outputs.some((o) => results.has(o))) return 0;
  const rank = (step.op.resultTypes[0] as { shape?: number[] } | undefined)?.shape?.length ?? 0;
  const dim = Number(step.op.attrs.dimension ?? -1);
  const axis = dim < 0 ? dim + rank : dim;
  let prefix = 0;
  for (let j = i + 1; j < steps.length; j++) {
    const uses = stepUses[j] as number[];
    if (!uses.some((u) => outs.has(u))) continue;
    const reader = steps[j] as Step;
    const a = reader.op.attrs;
    const start = Array.isArray(a.start_indices) ? (a.start_indices as unknown[]).map(Number) : null;
    const limit = Array.isArray(a.limit_indices) ? (a.limit_indices as unknown[]).map(Number) : null;
    const strides = Array.isArray(a.strides) ? (a.strides as unknown[]).map(Number) : null;
    // Only a slice reading one sort output from position 0 along the sorted axis.
    if (reader.op.name !== "stablehlo.slice" || uses.length !== 1 || !start || !limit) return 0;
    if (start[axis] !== 0 || (strides && strides[axis] !== 1)) return 0;
    prefix = Math.max(prefix, limit[axis] as number);
  }
  return prefix;
}

/** Regions the plan adds to an op: a sort's key function, where its comparator orders by one key. */
export function extraRegions(op: Op): Region[] {
  if (op.name !== "stablehlo.sort" || op.regions.length !== 1) return [];
  const region = op.regions[0] as Region;
  const key = comparatorKey(region);
  return key && key.keyOps.length > 0 ? [keyRegion(region, key)] : [];
}

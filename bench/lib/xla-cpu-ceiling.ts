/**
 * XLA CPU's own ceiling for coalescing on a bundle's program: JAX running the same exported
 * module (bench/anchors/jax_anchor.py latency --platform cpu) at batch 1 and at the largest
 * compiled size, in processes of their own on this machine's cores, so N x t(1) / t(N) says what
 * coalescing could gain on a CPU at all, beside the CPU engine's figure (engine-ceiling.ts).
 */
import { cpus } from "node:os";
import { anchorUnavailable, runAnchor } from "./anchor.ts";

export interface XlaCpuCeiling {
  /** Why it was not measured (no jax, no export at a size), or null. */
  readonly skipped: string | null;
  readonly largestCompiledSize: number;
  readonly msBatch1: number | null;
  readonly msLargest: number | null;
  /** largest x t(1) / t(largest). */
  readonly ceiling: number | null;
  readonly cores: number;
  readonly jax: string | null;
}

export async function xlaCpuCeiling(bundleDir: string, largest: number, runs = 30): Promise<XlaCpuCeiling> {
  const base = { largestCompiledSize: largest, cores: cpus().length };
  const why = anchorUnavailable(bundleDir, "cpu", 1) ?? anchorUnavailable(bundleDir, "cpu", largest);
  if (why) return { ...base, skipped: why, msBatch1: null, msLargest: null, ceiling: null, jax: null };
  const median = async (batch: number) => {
    const a = await runAnchor({ mode: "latency", bundleDir, batch, platform: "cpu", runs, timeoutMs: 300_000 });
    if (!a.ok || !a.result) throw new Error(`XLA CPU anchor at batch ${batch}: ${a.error ?? "no result"}`);
    return { ms: Number(a.result.median_ms), jax: String(a.result.jax ?? "") };
  };
  const one = await median(1);
  const big = await median(largest);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    ...base,
    skipped: null,
    msBatch1: r3(one.ms),
    msLargest: r3(big.ms),
    ceiling: r3((largest * one.ms) / big.ms),
    jax: one.jax,
  };
}

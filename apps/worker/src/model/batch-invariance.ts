import type { HostTensor } from "@xlaserve/core";
import { allocTyped, elementCount } from "@xlaserve/core";
import { sameBytes } from "../inline/run-sync.ts";
import { concatAxis, sliceRange } from "./batch-rows.ts";
import type { ModelPrograms } from "./model-programs.ts";

/** One larger compiled size against the smallest: are the same rows' outputs the same bits there? */
export interface InvarianceCheck {
  readonly size: number;
  /** The rows beside zeros (padding) give the bits they give alone. */
  readonly besideZeros: boolean;
  /** The rows beside other random rows (another request's) give the bits they give alone. */
  readonly besideRandom: boolean;
  /** Largest absolute difference over every output element where the bits differ (0: none). */
  readonly maxAbsDiff: number;
}

/** Whether coalescing changes any output bit of this model's programs on this engine. */
export interface BatchInvariance {
  /** Every check identical: a request's answer does not depend on the traffic it is coalesced with. */
  readonly invariant: boolean;
  readonly rows: number;
  readonly checks: readonly InvarianceCheck[];
  readonly ms: number;
}

/** Runs a (variant-less) program of `size` on `inputs` on the engine, with the model's weights. */
export type EngineRun = (size: number, inputs: HostTensor[]) => Promise<HostTensor[]>;

/**
 * Measured at load, for a model whose every input and output has a batch axis: random rows at the
 * smallest compiled size alone, then at the front of every larger compiled size beside zero rows
 * and beside other random rows, each output compared bit for bit with the alone run. Random rows
 * are for floating-point inputs (other inputs get zeros: random integers could be out-of-range
 * indices). Null for a model that cannot coalesce or has input-shape variants.
 */
export async function measureBatchInvariance(programs: ModelPrograms, run: EngineRun): Promise<BatchInvariance | null> {
  if (!programs.batchable || programs.hasVariants) return null;
  const t0 = performance.now();
  const sizes = programs.compiledBatchSizes;
  const rows = sizes[0] as number;
  const seed = { s: 0x2545f491 };
  const mine = fill(programs.zeroInputs(null, rows), seed);
  const alone = await run(rows, mine);
  const checks: InvarianceCheck[] = [];
  for (const size of sizes.slice(1)) {
    const zeros = programs.zeroInputs(null, size - rows);
    const others = fill(programs.zeroInputs(null, size - rows), seed);
    let maxAbsDiff = 0;
    const verdict = async (filler: HostTensor[]) => {
      const joined = mine.map((t, i) => concatAxis([t, filler[i] as HostTensor], programs.inputs[i]?.batchAxis ?? 0));
      const out = await run(size, joined);
      const front = out.map((t, o) => sliceRange(t, programs.outputs[o]?.batchAxis ?? 0, 0, rows));
      maxAbsDiff = Math.max(maxAbsDiff, largestDiff(front, alone));
      return sameBytes(front, alone);
    };
    checks.push({ size, besideZeros: await verdict(zeros), besideRandom: await verdict(others), maxAbsDiff });
  }
  const invariant = checks.every((c) => c.besideZeros && c.besideRandom);
  return { invariant, rows, checks, ms: Math.round((performance.now() - t0) * 10) / 10 };
}

/** Floating-point inputs filled with values in [-1, 1) from a fixed sequence (the same every load). */
function fill(inputs: HostTensor[], seed: { s: number }): HostTensor[] {
  return inputs.map((t) => {
    if (!(t.data instanceof Float32Array || t.data instanceof Float64Array)) return t;
    const data = allocTyped(t.dtype, elementCount(t.shape)) as Float32Array;
    for (let i = 0; i < data.length; i++) {
      seed.s = (Math.imul(seed.s, 1664525) + 1013904223) >>> 0;
      data[i] = seed.s / 2 ** 31 - 1;
    }
    return { ...t, data };
  });
}

function largestDiff(a: readonly HostTensor[], b: readonly HostTensor[]): number {
  let max = 0;
  a.forEach((t, i) => {
    const u = b[i];
    if (!u || !(t.data instanceof Float32Array || t.data instanceof Float64Array)) return;
    const x = t.data;
    const y = u.data as Float32Array;
    for (let k = 0; k < x.length; k++) {
      const d = Math.abs((x[k] as number) - (y[k] as number));
      if (d > max || Number.isNaN(d)) max = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
    }
  });
  return max;
}

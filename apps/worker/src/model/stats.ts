import type { ModelStats } from "@xlaserve/server/contract.ts";

type Duration = { count: number; ns: number };
type BatchParts = { computeInput: Duration; computeInfer: Duration; computeOutput: Duration };

/** A model's statistics as the worker counts them (ModelStats, writable). */
export type MutableStats = {
  inferenceCount: number;
  executionCount: number;
  lastInference: number;
  success: Duration;
  fail: Duration;
  queue: Duration;
  computeInput: Duration;
  computeInfer: Duration;
  computeOutput: Duration;
  batches: Record<number, BatchParts>;
};

const TIMED = ["success", "fail", "queue", "computeInput", "computeInfer", "computeOutput"] as const;
const PARTS = ["computeInput", "computeInfer", "computeOutput"] as const;
export type ComputePart = (typeof PARTS)[number];

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
    batches: {},
  };
}

/** A copy, so later counting does not change what was handed out. */
export function copyStats(s: ModelStats): MutableStats {
  const out = zeroStats();
  addStats(out, s);
  return out;
}

/** Adds `d` (another thread's figures, or an earlier version's, for the same model) into `into`. */
export function addStats(into: MutableStats, d: ModelStats): void {
  into.inferenceCount += d.inferenceCount;
  into.executionCount += d.executionCount;
  into.lastInference = Math.max(into.lastInference, d.lastInference);
  for (const key of TIMED) {
    into[key].count += d[key].count;
    into[key].ns += d[key].ns;
  }
  for (const [size, parts] of Object.entries(d.batches ?? {})) {
    const mine = batchOf(into, Number(size));
    for (const part of PARTS) {
      mine[part].count += parts[part].count;
      mine[part].ns += parts[part].ns;
    }
  }
}

/** One part of an execution of `rows` rows: in the model's totals and under its batch size. */
export function countPart(into: MutableStats, part: ComputePart, ns: number, rows: number): void {
  into[part].count++;
  into[part].ns += ns;
  const b = batchOf(into, rows)[part];
  b.count++;
  b.ns += ns;
}

function batchOf(s: MutableStats, rows: number): BatchParts {
  let b = s.batches[rows];
  if (!b) {
    b = { computeInput: { count: 0, ns: 0 }, computeInfer: { count: 0, ns: 0 }, computeOutput: { count: 0, ns: 0 } };
    s.batches[rows] = b;
  }
  return b;
}

/**
 * The last few thousand queue waits, for their median and 99th percentile (ReactantServer's
 * worker_queue_wait_seconds): recent behaviour, not an average since start.
 */
export class RecentWaits {
  private readonly seconds = new Float64Array(2048);
  private filled = 0;
  private next = 0;

  add(seconds: number): void {
    this.seconds[this.next] = seconds;
    this.next = (this.next + 1) % this.seconds.length;
    if (this.filled < this.seconds.length) this.filled++;
  }

  quantiles(): { p50: number; p99: number } {
    if (this.filled === 0) return { p50: 0, p99: 0 };
    const sorted = this.seconds.slice(0, this.filled).sort();
    const at = (q: number) => sorted[Math.min(this.filled - 1, Math.floor(q * this.filled))] as number;
    return { p50: at(0.5), p99: at(0.99) };
  }
}

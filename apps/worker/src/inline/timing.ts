import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import type { InlineCandidate } from "./inline-runs.ts";
import { runSync } from "./run-sync.ts";

/**
 * How a program is timed before it may run inline: on the engine thread first, then on this
 * thread after a warm-up, both by medians of windows of runs.
 */

/**
 * Timing on the engine thread, in rounds of at most ENGINE_RUNS runs or ENGINE_ROUND_MS (it
 * serves nothing else meanwhile, so a round is short; requests run between rounds), until a
 * round's median is within the threshold, or far past it, or ENGINE_ROUNDS are done: the engine
 * thread's code can be cold too (a model loaded first).
 */
const ENGINE_RUNS = 1000;
const ENGINE_ROUND_MS = 20;
const ENGINE_ROUNDS = 10;
/**
 * Warm-up on this thread: runs in windows of WINDOW until a window's median is within the
 * threshold, for at most LOCAL_BUDGET_MS of run time. The engine's code starts cold on this
 * thread (the MLP's first run takes about 9 ms, its 1000th about 20 us), so one short timing
 * would turn most small programs away.
 */
export const WINDOW = 64;
const LOCAL_BUDGET_MS = 300;
/** A round this far past the threshold ends the timing: no warm-up brings that down. */
const FAR_FACTOR = 8;
/** The warm-up yields to the event loop after this much work, so a load beside traffic stays unnoticed. */
const SLICE_MS = 2;
/** Runs in windows until one window's median is within `maxUs` (returned) or the budget is spent (null). */
export async function warmUpHere(
  twin: AbstractBackend,
  local: Executable,
  inputs: readonly HostTensor[],
  weights: readonly DeviceBuffer[],
  maxUs: number,
  stillWanted: () => boolean,
): Promise<number | null> {
  let spentMs = 0;
  let slice = performance.now();
  const window: number[] = [];
  let last: number | null = null;
  while (spentMs < LOCAL_BUDGET_MS && stillWanted()) {
    const t0 = performance.now();
    runSync(twin, local, inputs, weights);
    const ms = performance.now() - t0;
    spentMs += ms;
    window.push(ms * 1000);
    if (window.length === WINDOW) {
      last = median(window);
      if (last <= maxUs) return last;
      window.length = 0;
    }
    if (performance.now() - slice >= SLICE_MS) {
      await new Promise<void>((r) => setImmediate(r));
      slice = performance.now();
    }
  }
  return last;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

/** The median run on the engine thread after its warm-up (see ENGINE_ROUNDS). */
export async function engineMedian(
  c: InlineCandidate,
  maxUs: number,
  stillWanted: () => boolean,
): Promise<number | null> {
  let last: number | null = null;
  for (let round = 0; round < ENGINE_ROUNDS && stillWanted(); round++) {
    const us = await c.engineTimes(ENGINE_RUNS, ENGINE_ROUND_MS);
    if (us.length === 0) return last;
    // The later half: the earlier runs of a round include the tail of the warm-up.
    last = median(us.slice(us.length >> 1));
    if (last <= maxUs || last > maxUs * FAR_FACTOR) return last;
  }
  return last;
}

import type { DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import { type InlineCandidate, type InlineHost, InlineRuns, type InlineVerdict } from "../inline/inline-runs.ts";
import type { ModelPrograms } from "./model-programs.ts";
import type { ProbeResult } from "./probe.ts";
import type { ProgramTarget } from "./program-types.ts";

/**
 * Models with more weight bytes than this never run inline: their weights would be held a second
 * time on the HTTP thread, outside the weight budget (small programs have small weights anyway).
 */
export const INLINE_MAX_WEIGHT_BYTES = 8 * 1024 * 1024;

/** What timing a model's programs for inline runs reads from the model. */
export interface InlineSubject {
  readonly programs: ModelPrograms;
  readonly probe: ProbeResult | null;
  readonly hostWeights: readonly HostTensor[];
  /** `fn` with the model's weights resident on the engine, as a request holds them. */
  withEngineWeights<T>(fn: (weights: readonly DeviceBuffer[]) => Promise<T>): Promise<T>;
}

/** One target per program: a module serving several batch sizes is timed at the largest. */
export function largestPerProgram(programs: ModelPrograms): ProgramTarget[] {
  const largest = new Map<Executable, ProgramTarget>();
  for (const t of programs.targets()) {
    const seen = largest.get(t.program.executable);
    if (!seen || seen.batchSize < t.batchSize) largest.set(t.program.executable, t);
  }
  return [...largest.values()];
}

/**
 * Times each of the model's programs on the engine thread, then those within `maxUs` on this
 * thread (inline/), and returns the inline runs of those that qualified with every program's
 * verdict. Runs beside the requests, which use the engine thread until it is done.
 */
export async function prepareInlineRuns(
  m: InlineSubject,
  backend: InlineHost,
  maxUs: number,
  stillWanted: () => boolean,
): Promise<{ runs: InlineRuns | null; verdicts: InlineVerdict[] }> {
  const twin = await backend.localTwin();
  const candidates: InlineCandidate[] = largestPerProgram(m.programs).map(({ variant, batchSize, program }) => {
    const inputs = m.programs.zeroInputs(variant, batchSize);
    const probed = m.probe?.perProgram.find((p) => p.variant === variant && p.batchSize === batchSize);
    return {
      label: variant === null ? `b${batchSize}` : `v${variant} b${batchSize}`,
      executable: program.executable,
      inputs,
      probeMs: probed?.ms ?? null,
      engineTimes: (maxRuns, budgetMs) =>
        m.withEngineWeights((weights) => backend.timeRuns(program.executable, inputs, weights, maxRuns, budgetMs)),
      reference: () => m.withEngineWeights((weights) => backend.run(program.executable, inputs, weights)),
    };
  });
  return InlineRuns.prepare(backend, twin, candidates, m.hostWeights, maxUs, stillWanted);
}

import type { Logger } from "@xlaserve/core";
import { asXlaserveError } from "@xlaserve/core";
import { type ProbeFigureStore, storeFigures, storedFigures } from "../memory/probe-figures.ts";
import type { ProbeResult, RuntimeModel } from "../model/runtime-model.ts";
import type { LoadPhases } from "./load-report.ts";

/**
 * A loading model's probe: figures an earlier probe of these very programs measured stand in for
 * it (then the programs are warmed up now when `warmNow`: a reload swaps in warm, while at start
 * the warm-up runs once the worker serves); else the probe runs now (rule 5: the peak is reset
 * before each run; it doubles as the warm-up) and what it measured is stored.
 */
export async function probeOrReuse(
  model: RuntimeModel,
  figures: ProbeFigureStore | undefined,
  warmNow: boolean,
  phases: LoadPhases,
  log: Logger,
): Promise<ProbeResult> {
  const stored = figures ? storedFigures(model, figures) : null;
  if (stored) {
    const probe = model.useStoredFigures(stored);
    if (warmNow) {
      await model.warmUp();
      phases.mark("warmUpMs");
    }
    return probe;
  }
  const probe = await model.runProbe();
  phases.mark("probeMs");
  if (figures) {
    try {
      storeFigures(model, figures);
    } catch (err) {
      log.warn("probe figures not stored", { model: model.name, error: asXlaserveError(err).message });
    }
  }
  return probe;
}

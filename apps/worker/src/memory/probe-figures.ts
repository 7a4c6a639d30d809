import type { ProbedProgram, RuntimeModel } from "../model/runtime-model.ts";

/**
 * Where the memory probe's figures persist between starts (the program cache's index). Keys name a
 * program entry and the (variant, batch size) it ran as; the identity says what they were measured
 * with, so figures of anything else never count.
 */
export interface ProbeFigureStore {
  get(key: string, identity: string): { scratchBytes: number } | null;
  put(key: string, identity: string, figures: { scratchBytes: number; weightBytes: number }): void;
}

interface Target {
  readonly key: string;
  readonly identity: string;
  readonly variant: number | null;
  readonly batchSize: number;
}

/**
 * One entry per probe run, or null when a program has no cache entry, or (`hitsOnly`, for reading)
 * was not loaded from the cache: a program compiled now (a miss or a recompile, whose entry file
 * replaced the old one) is measured again, since a recompile may pick other kernels and with them
 * other scratch (ARCHITECTURE rule 6); its new figures then replace the stored ones.
 */
function targets(model: RuntimeModel, hitsOnly: boolean): Target[] | null {
  const out: Target[] = [];
  for (const { variant, batchSize, program } of model.probeTargets()) {
    if (!program.entryPath || (hitsOnly && program.outcome !== "hit")) return null;
    const shapes = model.inputs.map((_, i) => model.inputShape(i, variant, batchSize).join("x")).join(",");
    out.push({
      key: `${program.entryPath}#v${variant ?? "-"}b${batchSize}`,
      // The entry path holds the partition (device identity), module hash and options hash.
      identity: `probe1|${program.entryPath}|inputs ${shapes}|weights ${model.weightBytes}|residency ${model.residency}`,
      variant,
      batchSize,
    });
  }
  return out;
}

/** The stored figures of every probe run of `model`, or null if any is missing or stale. */
export function storedFigures(model: RuntimeModel, store: ProbeFigureStore): ProbedProgram[] | null {
  const ts = targets(model, true);
  if (!ts) return null;
  const out: ProbedProgram[] = [];
  for (const t of ts) {
    const f = store.get(t.key, t.identity);
    if (!f) return null;
    out.push({ variant: t.variant, batchSize: t.batchSize, scratchBytes: f.scratchBytes, ms: 0 });
  }
  return out;
}

/** Records what the probe just measured, for programs stored in the cache. */
export function storeFigures(model: RuntimeModel, store: ProbeFigureStore): void {
  const probe = model.probe;
  const ts = targets(model, false);
  if (probe?.source !== "measured" || !probe.peakReset || !ts) return;
  for (const t of ts) {
    const p = probe.perProgram.find((x) => x.variant === t.variant && x.batchSize === t.batchSize);
    if (p) store.put(t.key, t.identity, { scratchBytes: p.scratchBytes, weightBytes: model.weightBytes });
  }
}

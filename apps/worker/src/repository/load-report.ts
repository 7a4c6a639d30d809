import { formatBytes } from "../memory/budget.ts";
import type { RuntimeModel } from "../model/runtime-model.ts";

const PHASES = ["readMs", "programsMs", "uploadMs", "probeMs", "warmUpMs"] as const;
type Phase = (typeof PHASES)[number];

/**
 * Where a load's time goes (the "model loaded" line): bundle read and hashing (the weights read
 * into memory included), programs (compile or cache load), weight upload, probe, warm-up.
 */
export class LoadPhases {
  private readonly ms = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
  private lap = performance.now();

  /** The time since the last mark goes to `phase`. */
  mark(phase: Phase): void {
    const now = performance.now();
    this.ms[phase] += now - this.lap;
    this.lap = now;
  }

  rounded(): Record<Phase, number> {
    return Object.fromEntries(PHASES.map((p) => [p, round1(this.ms[p])])) as Record<Phase, number>;
  }
}

/**
 * The "model loaded" / "model reloaded" line's fields: on a terminal what a person reads (time,
 * cache outcome, memory, residency); each program and phase, and the raw figures, in `detail`.
 */
export function loadedLogFields(model: RuntimeModel, loadMs: number, phases: LoadPhases) {
  const records = model.programRecords();
  const hits = records.filter((r) => r.outcome === "hit").length;
  const probe = model.probe;
  return {
    model: model.name,
    ms: round1(loadMs),
    cache: `${hits}/${records.length} hit`,
    memory: `weights ${formatBytes(model.weightBytes)}, scratch ${formatBytes(model.scratchBytes)} (${probe?.source ?? "none"})`,
    residency: model.residency,
    detail: {
      generation: model.generation,
      programs: records.map((r) => ({
        file: r.file,
        cache: r.outcome,
        ms: round1(r.outcome === "hit" ? r.loadMs : r.compileMs + r.loadMs),
      })),
      phases: phases.rounded(),
      weightBytes: model.weightBytes,
      scratchBytes: model.scratchBytes,
      figures: probe?.source ?? "none",
      warm: model.isWarm(),
    },
  };
}

export function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

import { totalmem } from "node:os";
import type { AbstractBackend } from "@xlaserve/core";
import { type Residency, type WeightBudget, computeWeightBudget, formatBytes } from "../memory/budget.ts";
import type { RuntimeModel } from "../model/runtime-model.ts";

export interface MemoryOptions {
  readonly weightFraction: number;
  readonly wiggle: number;
  readonly defaultResidency: Residency;
  readonly residency?: Readonly<Record<string, Residency>>;
  /** Overrides the device's limit (the CPU engine: host memory given to the worker). */
  readonly limitBytes?: number;
}

/**
 * The weight budget over a set of models and who fits in it: the pool after every model's run
 * scratch, the room each residency has, and the models whose weights it cannot hold.
 */
export class WeightAdmission {
  constructor(
    private readonly memory: MemoryOptions,
    private readonly backend: AbstractBackend,
  ) {}

  residencyFor(name: string): Residency {
    return this.memory.residency?.[name] ?? this.memory.defaultResidency;
  }

  /** The budget for exactly this set of models. */
  budgetFor(models: readonly RuntimeModel[]): WeightBudget {
    const m = this.memory;
    return computeWeightBudget({
      limitBytes: this.limitBytes(),
      fraction: m.weightFraction,
      wiggle: m.wiggle,
      maxScratchBytes: Math.max(0, ...models.map((x) => x.scratchBytes)),
      pinnedBytes: models.filter((x) => x.residency === "pinned").reduce((a, x) => a + x.weightBytes, 0),
    });
  }

  /** Bytes a model of this residency may hold under a budget (`ownPinned`: its weights, if among the pinned). */
  roomFor(budget: WeightBudget, residency: Residency, ownPinned: number): number {
    return residency === "pinned" ? budget.poolBytes - (budget.pinnedBytes - ownPinned) : budget.onDemandBytes;
  }

  /** Models whose weights have no room under the budget of exactly this set. */
  misfits(models: readonly RuntimeModel[]): Array<{ model: RuntimeModel; roomBytes: number }> {
    const b = this.budgetFor(models);
    return models.flatMap((m) => {
      const roomBytes = this.roomFor(b, m.residency, m.residency === "pinned" ? m.weightBytes : 0);
      return m.weightBytes > roomBytes ? [{ model: m, roomBytes }] : [];
    });
  }

  private limitBytes(): number {
    if (this.memory.limitBytes) return this.memory.limitBytes;
    try {
      const limit = this.backend.memoryStats().limitBytes;
      if (limit && limit > 0) return limit;
    } catch {
      // fall through to the machine's memory
    }
    return totalmem();
  }
}

/**
 * The "weight budget resolved" line: on a terminal the cause, the formula with its figures and
 * the over-commit flag; every raw figure and each model's part in `detail`.
 */
export function budgetLogFields(cause: string, budget: WeightBudget, models: readonly RuntimeModel[]) {
  return {
    cause,
    summary: `pool ${formatBytes(budget.poolBytes)} = min(${budget.fraction} x ${formatBytes(budget.limitBytes)}, (1 - ${budget.wiggle}) x ${formatBytes(budget.limitBytes)} - ${formatBytes(budget.maxScratchBytes)} scratch); on-demand ${formatBytes(budget.onDemandBytes)} after ${formatBytes(budget.pinnedBytes)} pinned`,
    // Scratch figures: measured by a probe now, or stored by an earlier probe of the same programs.
    figures: `${models.filter((x) => x.probe?.source === "measured").length} measured, ${models.filter((x) => x.probe?.source === "stored").length} stored`,
    // Said on the line when it happens; always in the JSON.
    ...(budget.pinnedOverCommit ? { pinnedOverCommit: true } : {}),
    detail: {
      pinnedOverCommit: budget.pinnedOverCommit,
      limitBytes: budget.limitBytes,
      fraction: budget.fraction,
      wiggle: budget.wiggle,
      maxScratchBytes: budget.maxScratchBytes,
      poolBytes: budget.poolBytes,
      pinnedBytes: budget.pinnedBytes,
      onDemandBytes: budget.onDemandBytes,
      models: models.map((x) => ({
        name: x.name,
        residency: x.residency,
        weightBytes: x.weightBytes,
        scratchBytes: x.scratchBytes,
        figures: x.probe?.source ?? "none",
      })),
    },
  };
}

import type { HostTensor } from "@xlaserve/core";
import type { WeightManager } from "../memory/weights.ts";
import type { ProgramPlacements } from "../placement/program-placements.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";
import { type BatchItem, type BatchPlan, planBatch } from "./batch-plan.ts";
import type { ModelPrograms } from "./model-programs.ts";
import type { RuntimeHooks } from "./runtime-options.ts";
import { type MutableStats, type RecentWaits, countPart } from "./stats.ts";

/** One request as the scheduler hands it to an execution: its inputs and when it arrived. */
export interface GroupItem extends BatchItem {
  readonly t0: number;
}

/** What an execution needs of its model. */
export interface ExecutionParts {
  readonly programs: ModelPrograms;
  readonly placements: ProgramPlacements;
  readonly weights: WeightManager;
  readonly ownerId: string;
  readonly deviceLock: DeviceLock;
  readonly counters: MutableStats;
  readonly queueWaits: RecentWaits;
  readonly hooks: RuntimeHooks;
  name(): string;
}

const nsSince = (t0: number) => Math.round((performance.now() - t0) * 1e6);

/**
 * A model's executions: the requests the scheduler took, joined and padded to the compiled size,
 * run where the program's placement says (inline on this thread when its weights are resident,
 * else under the device lock with its weights leased), split back per request and timed into
 * the model's statistics.
 */
export class BatchExecution {
  constructor(private readonly m: ExecutionParts) {}

  /** One execution the scheduler dispatched: the requests joined at `size` (batch-plan.ts). */
  run(
    variant: number | null,
    items: readonly GroupItem[],
    size: number | undefined,
    started: () => void,
  ): Map<string, HostTensor>[] | Promise<Map<string, HostTensor>[]> {
    const now = performance.now();
    for (const i of items) {
      const ms = now - i.t0;
      this.m.counters.queue.count++;
      this.m.counters.queue.ns += Math.round(ms * 1e6);
      this.m.queueWaits.add(ms / 1000);
    }
    const plan = planBatch(this.m.programs, this.m.name(), variant, items, size);
    return this.runInlineNow(plan) ?? this.runLocked(plan, started);
  }

  /** Whether an execution at `size` would run inline now (its program inline, its weights resident). */
  runsInline(variant: number | null, size: number): boolean {
    const placement = this.m.placements.of(this.m.programs.programFor(variant, size).program.executable);
    return placement.where === "inline" && (this.m.weights.state(this.m.ownerId)?.resident ?? false);
  }

  /**
   * The plan's run now, on this thread, when its program runs inline and the weights are
   * resident; null otherwise (runLocked then). No device lock: the run touches only this
   * thread's engine, whose memory no probe measures.
   */
  private runInlineNow(plan: BatchPlan): Map<string, HostTensor>[] | null {
    const placement = this.m.placements.of(plan.program.executable);
    if (placement.where !== "inline") return null;
    const lease = this.m.weights.leaseIfResident(this.m.ownerId);
    if (!lease) return null;
    try {
      const tIn = performance.now();
      const prepared = plan.inputsFor();
      const tRun = performance.now();
      const results = placement.runNow(prepared);
      return this.splitTimed(plan, results, tIn, tRun);
    } finally {
      lease.release();
    }
  }

  /** The plan's run under the device lock, with its weights leased (loaded first when evicted). */
  private runLocked(plan: BatchPlan, started: () => void): Promise<Map<string, HostTensor>[]> {
    return this.m.deviceLock.shared(async () => {
      const tIn = performance.now();
      const lease = await this.m.weights.acquire(this.m.ownerId);
      started();
      try {
        const executable = plan.program.executable;
        const placement = this.m.placements.of(executable);
        const prepared = plan.inputsFor();
        const tRun = performance.now();
        // An inline program whose weights had to be loaded first: the run itself is inline.
        const results =
          placement.where === "inline"
            ? placement.runNow(prepared)
            : await placement.run(executable, prepared, lease.buffers);
        return this.splitTimed(plan, results, tIn, tRun);
      } finally {
        lease.release();
      }
    });
  }

  /**
   * Splits the results back per request and counts the execution: inputs prepared from `tIn`
   * (the lease included), the run from `tRun` until now, then the split.
   */
  private splitTimed(
    plan: BatchPlan,
    results: readonly HostTensor[],
    tIn: number,
    tRun: number,
  ): Map<string, HostTensor>[] {
    const tOut = performance.now();
    const out = plan.split(results);
    const inputNs = Math.round((tRun - tIn) * 1e6);
    const inferNs = Math.round((tOut - tRun) * 1e6);
    const outputNs = nsSince(tOut);
    countPart(this.m.counters, "computeInput", inputNs, plan.rows);
    countPart(this.m.counters, "computeInfer", inferNs, plan.rows);
    countPart(this.m.counters, "computeOutput", outputNs, plan.rows);
    this.m.counters.executionCount++;
    this.m.hooks.computeSeconds?.(this.m.name(), inferNs / 1e9);
    return out;
  }
}

import type { AbstractBackend } from "@xlaserve/core";
import { Value } from "@sinclair/typebox/value";
import { type Config, ConfigSchema } from "@xlaserve/core/config/schema.ts";
import type { ModelQueueOptions } from "../model/runtime-model.ts";
import type { SchedulerOptions } from "./device-scheduler.ts";

export type SchedulingConfig = Config["scheduler"];

/** The scheduler section with every default (what a registry built without one uses). */
export function defaultScheduling(): SchedulingConfig {
  return Value.Default(ConfigSchema.properties.scheduler, {}) as SchedulingConfig;
}

/**
 * The device scheduler's options. Unset (0), executions on the device are bounded under fifo
 * only by each model's own limit, as admitted requests then travel to the engine together; under
 * fair and edf by 1 on a serial engine (2 elsewhere, where one execution's copies overlap another's
 * run), so that requests wait in the queues the discipline orders rather than in the engine's.
 */
export function schedulerOptions(cfg: SchedulingConfig, backend: AbstractBackend): SchedulerOptions {
  const auto = cfg.discipline === "fifo" ? Number.POSITIVE_INFINITY : backend.serialCompute ? 1 : 2;
  return {
    discipline: cfg.discipline,
    maxInFlight: cfg.maxInFlight > 0 ? cfg.maxInFlight : auto,
    maxQueued: cfg.maxQueued,
    defaultPriority: cfg.defaultPriority,
    emaHalfLifeMs: cfg.emaHalfLifeMs,
    costAlpha: cfg.costAlpha,
    fairnessCap: cfg.fairnessCap,
  };
}

/** A coalescing model's executions in flight at once on a device (an engine that is not serial). */
export const COALESCED_IN_FLIGHT_ON_DEVICE = 2;

/** One model's queue options: the per-model section over the worker-wide settings. */
export function queueOptions(
  name: string,
  cfg: SchedulingConfig,
  concurrency: { readonly perModel: number; readonly queueDepth: number; readonly dynamicBatching?: boolean },
  backend: AbstractBackend,
): ModelQueueOptions {
  const m = cfg.models[name] ?? {};
  return {
    coalesce: concurrency.dynamicBatching ?? false,
    // A serial engine runs one program at a time: one coalesced execution in flight makes the
    // groups largest (measured: MLP 11k req/s in-process with 1 in flight, 5k with 2 or 4). A
    // device runs one at a time too (it cannot be preempted): two in flight let one's copies
    // overlap the other's run, and whatever arrives meanwhile gathers into the next batch
    // instead of into more small executions queued on the device.
    coalescedInFlight: backend.serialCompute ? 1 : Math.min(COALESCED_IN_FLIGHT_ON_DEVICE, concurrency.perModel),
    maxInFlight: concurrency.perModel,
    queueDepth: m.queueDepth ?? concurrency.queueDepth,
    maxQueueDelayMs: (m.maxQueueDelayUs ?? cfg.maxQueueDelayUs) / 1000,
    weight: m.weight ?? 1,
    sizeChoice: cfg.batchSizeChoice,
    maxRows: m.maxBatchSize,
    preferred: m.preferredBatchSizes,
  };
}

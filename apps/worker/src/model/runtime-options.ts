import type { AbstractBackend, HostTensor, Logger } from "@xlaserve/core";
import type { Bundle, BundleModule } from "@xlaserve/core/bundle/types.ts";
import type { Residency } from "../memory/budget.ts";
import type { WeightManager } from "../memory/weights.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";
import type { DeviceScheduler } from "../scheduler/device-scheduler.ts";
import type { QueuePolicy } from "../scheduler/model-queue.ts";
import type { LoadedProgram } from "./program-types.ts";

/** Hooks the runtime reports through (the worker binds them to the server's Metrics). */
export interface RuntimeHooks {
  computeSeconds?(model: string, seconds: number): void;
}

/** How the model's queue is served, less what the model knows itself (whether it can coalesce). */
export type ModelQueueOptions = Omit<QueuePolicy, "compiledBatchSizes" | "coalesce"> & {
  /** Coalesce queued requests into one execution where every input and output has a batch axis. */
  readonly coalesce: boolean;
  /** Executions in flight at once when it does coalesce. */
  readonly coalescedInFlight: number;
};

export interface RuntimeModelOptions {
  readonly bundle: Bundle;
  readonly backend: AbstractBackend;
  readonly platform: string;
  readonly programs: ReadonlyMap<BundleModule, LoadedProgram>;
  readonly weights: WeightManager;
  readonly residency: Residency;
  readonly hostWeights: readonly HostTensor[];
  readonly weightBytes: number;
  readonly scheduler: DeviceScheduler;
  readonly queue: ModelQueueOptions;
  readonly deviceLock: DeviceLock;
  readonly log: Logger;
  readonly hooks?: RuntimeHooks;
  readonly generation: number;
  readonly fingerprint: string;
  readonly loadMs: number;
}

import type { AbstractBackend, Logger, VerifiedFiles } from "@xlaserve/core";
import type { ModelState, ServerInfo } from "@xlaserve/server/contract.ts";
import type { WeightBudget } from "../memory/budget.ts";
import type { ProbeFigureStore } from "../memory/probe-figures.ts";
import type { LoadedProgram, ProgramSource, RuntimeHooks, RuntimeModel } from "../model/runtime-model.ts";
import type { SchedulingConfig } from "../scheduler/settings.ts";
import type { MemoryOptions } from "./weight-admission.ts";

/** What a model registry is built from: the repository, the engine, memory, scheduling, hooks. */
export interface RegistryOptions {
  readonly repository: string;
  readonly backend: AbstractBackend;
  readonly platform: string;
  readonly programs: ProgramSource;
  readonly log: Logger;
  readonly memory: MemoryOptions;
  readonly concurrency: { readonly perModel: number; readonly queueDepth: number; readonly dynamicBatching?: boolean };
  readonly serverInfo: () => ServerInfo;
  /** Measure each batchable model's batch invariance once it serves (the worker does; tests that count runs do not). */
  readonly measureBatchInvariance?: boolean;
  /** The device scheduler's settings (config scheduler); defaults when absent. */
  readonly scheduling?: SchedulingConfig;
  readonly hooks?: RegistryHooks;
  /** Serve model folders that are links to folders outside the repository (refused by default). */
  readonly followLinksOutside?: boolean;
  /** Weights files already checked against their manifest's sha256 (skips hashing them again). */
  readonly verifiedWeights?: VerifiedFiles;
  /** Persisted probe figures (the program cache's index): lets a warm start skip the probe. */
  readonly probeFigures?: ProbeFigureStore;
  /**
   * Programs whose measured run takes at most this many microseconds run on the HTTP thread
   * (inline-runs.ts); 0 keeps every run on the engine. Only engines that can run there too use
   * it (the threaded CPU engine).
   */
  readonly inlineMaxUs?: number;
}

export interface RegistryHooks extends RuntimeHooks {
  weightLoad?(model: string, bytes: number, seconds: number): void;
  weightEvict?(model: string, bytes: number): void;
  programLoaded?(model: string, program: LoadedProgram): void;
  budgetResolved?(budget: WeightBudget): void;
}

/** One model name in the repository: its current version, state and why it is not READY. */
export interface Slot {
  readonly name: string;
  dir: string;
  current: RuntimeModel | null;
  state: ModelState;
  reason: string;
  /** Serializes loads/unloads of one name. */
  chain: Promise<void>;
  /** Fingerprint of the bundle files the last attempt (success or failure) saw. */
  attempted: string;
}

export type BudgetCause = "startup" | "load" | "replace" | "remove";

import type { AbstractBackend, DeviceBuffer, HostTensor, Logger } from "@xlaserve/core";
import { XlaserveError, uploadAll } from "@xlaserve/core";
import type { Bundle, BundleModule, TensorSpec } from "@xlaserve/core/bundle/types.ts";
import type { InferRequest, ModelStats, ServedModel } from "@xlaserve/server/contract.ts";
import { type InlineVerdict, isInlineHost } from "../inline/inline-runs.ts";
import type { Residency } from "../memory/budget.ts";
import type { WeightManager, WeightOwner } from "../memory/weights.ts";
import { basePlacement } from "../placement/base-placement.ts";
import { ProgramPlacements } from "../placement/program-placements.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";
import type { DeviceScheduler } from "../scheduler/device-scheduler.ts";
import type { ModelQueue, QueueFigures } from "../scheduler/model-queue.ts";
import { type BatchInvariance, measureBatchInvariance } from "./batch-invariance.ts";
import { BatchExecution, type GroupItem } from "./batch-execution.ts";
import { INLINE_MAX_WEIGHT_BYTES, prepareInlineRuns } from "./inline-prep.ts";
import { ModelPrograms } from "./model-programs.ts";
import { type ProbeResult, type ProbedProgram, resultOf, runProbe, warmUp } from "./probe.ts";
import type { LoadedProgram, ProgramRecord, ProgramTarget } from "./program-types.ts";
import { RecentWaits, addStats, copyStats, zeroStats } from "./stats.ts";
import type { RuntimeHooks, RuntimeModelOptions } from "./runtime-options.ts";

export type { CacheOutcome, LoadedProgram, ProgramRecord, ProgramSource } from "./program-types.ts";
export type { ProbeResult, ProbedProgram } from "./probe.ts";
export { INLINE_MAX_WEIGHT_BYTES } from "./inline-prep.ts";
export type { ModelQueueOptions, RuntimeHooks, RuntimeModelOptions } from "./runtime-options.ts";

let nextOwnerId = 0;

/** Requests a model answers before its programs are timed for inline runs (see onInlineDue). */
export const INLINE_AFTER_REQUESTS = 256;

const nsSince = (t0: number) => Math.round((performance.now() - t0) * 1e6);

/**
 * One loaded version of a bundle, serving requests (the ServedModel the HTTP layer sees). A
 * request's batch runs on the smallest compiled size that holds it, padded with zeros; the padding
 * is stripped from every output whose batch axis is known. A retired model (replaced by a reload)
 * lets its in-flight requests finish and forwards new ones to its successor.
 */
export class RuntimeModel implements ServedModel {
  private currentName: string;
  readonly version = "1";
  readonly platform: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly compiledBatchSizes: readonly number[];
  readonly maxBatchSize: number;
  readonly bundle: Bundle;
  readonly residency: Residency;
  readonly weightBytes: number;
  readonly generation: number;
  readonly fingerprint: string;
  readonly ownerId: string;
  readonly programs: ModelPrograms;
  readonly backend: AbstractBackend;
  readonly deviceLock: DeviceLock;
  readonly weights: WeightManager;
  readonly hostWeights: readonly HostTensor[];
  loadMs: number;
  scratchBytes = 0;
  probe: ProbeResult | null = null;
  /** Whether coalescing changes any output bit of this model here (batch-invariance.ts); null until measured. */
  batchInvariance: BatchInvariance | null = null;
  /** Filled by the registry: the budget figures and the state reported in extra(). */
  budgetInfo: () => Record<string, unknown> = () => ({});

  private readonly placements: ProgramPlacements;
  /** Runs what the scheduler dispatches (batch-execution.ts). */
  private readonly execution: BatchExecution;
  /** This version's queue on the device's scheduler. */
  private readonly queue: ModelQueue<GroupItem, Map<string, HostTensor>>;
  private readonly scheduler: DeviceScheduler;
  private readonly log: Logger;
  private readonly hooks: RuntimeHooks;
  private registered = false;
  private warm = false;
  private disposed = false;
  private successor: RuntimeModel | null = null;
  private retired = false;
  private retiredError: XlaserveError | null = null;
  private inlineAsked = false;
  /**
   * Called once, after INLINE_AFTER_REQUESTS requests, to start prepareInline() (the registry
   * sets it). Not at load: preparing stalls the event loop for about 15-30 ms (the engine's
   * import on this thread, program copies, cold first runs), and holds weights a second time;
   * only a model with traffic gains from inline runs, so only such a model pays for them.
   */
  onInlineDue: (() => void) | null = null;
  private untilInlineDue = INLINE_AFTER_REQUESTS;

  private readonly counters = zeroStats();
  private readonly queueWaits = new RecentWaits();
  /**
   * The version this one replaced, until its last request is done (foldPredecessor): a model's
   * statistics run on across reloads, as its /metrics counters do.
   */
  private predecessor: RuntimeModel | null = null;

  constructor(options: RuntimeModelOptions) {
    const { bundle } = options;
    this.bundle = bundle;
    this.currentName = bundle.name;
    this.platform = options.platform;
    this.programs = new ModelPrograms(bundle, options.programs, () => this.name);
    this.inputs = this.programs.inputs;
    this.outputs = this.programs.outputs;
    this.compiledBatchSizes = this.programs.compiledBatchSizes;
    this.maxBatchSize = this.programs.maxBatchSize;
    this.backend = options.backend;
    this.placements = new ProgramPlacements(basePlacement(options.backend));
    this.weights = options.weights;
    this.residency = options.residency;
    this.hostWeights = options.hostWeights;
    this.weightBytes = options.weightBytes;
    const coalesce = options.queue.coalesce && this.programs.batchable;
    this.scheduler = options.scheduler;
    this.queue = options.scheduler.register<GroupItem, Map<string, HostTensor>>(
      `model "${this.name}"`,
      {
        ...options.queue,
        compiledBatchSizes: this.compiledBatchSizes,
        coalesce,
        maxInFlight: coalesce ? options.queue.coalescedInFlight : options.queue.maxInFlight,
      },
      (variant, items, size, started) => this.execution.run(variant, items, size, started),
    );
    this.deviceLock = options.deviceLock;
    this.log = options.log;
    this.hooks = options.hooks ?? {};
    this.generation = options.generation;
    this.fingerprint = options.fingerprint;
    this.loadMs = options.loadMs;
    this.ownerId = `${this.name}#${options.generation}.${nextOwnerId++}`;
    this.execution = new BatchExecution({
      programs: this.programs,
      placements: this.placements,
      weights: this.weights,
      ownerId: this.ownerId,
      deviceLock: this.deviceLock,
      counters: this.counters,
      queueWaits: this.queueWaits,
      hooks: this.hooks,
      name: () => this.name,
    });
  }

  /** Changes only through an in-place rename (the bundle folder was renamed). */
  get name(): string {
    return this.currentName;
  }

  set name(name: string) {
    this.currentName = name;
    this.queue.label = `model "${name}"`;
  }

  /** The weight-manager registration of this model's weights. */
  weightOwner(): WeightOwner {
    const backend = this.backend;
    const host = this.hostWeights;
    const self = this;
    return {
      id: this.ownerId,
      get name() {
        return self.name;
      },
      bytes: this.weightBytes,
      residency: this.residency,
      upload: () => uploadAll(backend, host),
    };
  }

  async registerWeights(): Promise<void> {
    if (this.registered) return;
    await this.weights.register(this.weightOwner());
    this.registered = true;
  }

  programRecords(): ProgramRecord[] {
    return this.programs.records();
  }

  ready(): boolean {
    if (this.retired) return this.successor?.ready() ?? false;
    return !this.disposed && this.registered;
  }

  isRetired(): boolean {
    return this.retired;
  }

  /** The weight figures of the model's status, also listed per model by the registry's index. */
  weightFigures() {
    const w = this.weights.state(this.ownerId);
    return {
      residency: this.residency,
      resident: w?.resident ?? false,
      weightBytes: this.weightBytes,
      scratchBytes: this.scratchBytes,
      weightLoads: w?.loads ?? 0,
      weightEvicts: w?.evicts ?? 0,
    };
  }

  extra(): Record<string, unknown> {
    return {
      generation: this.generation,
      bundleDir: this.bundle.dir,
      ...this.weightFigures(),
      loadMs: Math.round(this.loadMs * 10) / 10,
      programs: this.programRecords(),
      probe: this.probe,
      batchInvariance: this.batchInvariance,
      queue: this.queueFigures(),
      inline: this.placements.inline ? this.placements.inline.figures() : null,
      ...this.budgetInfo(),
    };
  }

  stats(): ModelStats {
    const out = copyStats(this.counters);
    if (this.predecessor) addStats(out, this.predecessor.stats());
    return out;
  }

  queueWaitQuantiles(): { p50: number; p99: number } {
    return this.queueWaits.quantiles();
  }

  /** This version replaces `old`: its statistics count on from old's. */
  inheritStats(old: RuntimeModel): void {
    this.predecessor = old;
  }

  /** The replaced version has drained: its final figures become part of this one's. */
  foldPredecessor(): void {
    const old = this.predecessor;
    if (!old) return;
    addStats(this.counters, old.stats());
    this.predecessor = null;
  }

  /** The scheduler's figures for this version: queued, running, waits, batch fill, sheds. */
  queueFigures(): QueueFigures {
    return this.queue.figures();
  }

  programFor(variant: number | null, batchSize: number): { module: BundleModule; program: LoadedProgram } {
    return this.programs.programFor(variant, batchSize);
  }

  variants(): (number | null)[] {
    return this.programs.variants();
  }

  inputShape(index: number, variant: number | null, batchSize: number): number[] {
    return this.programs.inputShape(index, variant, batchSize);
  }

  probeTargets(): ProgramTarget[] {
    return this.programs.targets();
  }

  async infer(request: InferRequest): Promise<Map<string, HostTensor>> {
    if (this.retired) {
      if (this.successor) return this.successor.infer(request);
      throw this.retiredError ?? new XlaserveError("UNAVAILABLE", `model "${this.name}" was unloaded`);
    }
    if (this.disposed) throw new XlaserveError("UNAVAILABLE", `model "${this.name}" is not loaded`);
    if (this.untilInlineDue > 0 && --this.untilInlineDue === 0) this.onInlineDue?.();
    const t0 = performance.now();
    const c = this.counters;
    const variant = this.programs.pickVariant(request.inputs);
    const batch = this.programs.requestBatch(request.inputs);
    try {
      const out = await this.scheduler.submit(this.queue, {
        variant,
        rows: batch,
        priority: request.priority,
        deadline: request.deadline,
        signal: request.signal,
        payload: { inputs: request.inputs, batch, t0 },
      });
      this.countSuccess(batch ?? 1, t0);
      return out;
    } catch (err) {
      c.fail.count++;
      c.fail.ns += nsSince(t0);
      throw err;
    }
  }

  /** Refuses (QUEUE_FULL) when this model's queue or the device's is full now, before the request is read. */
  admit(): void {
    if (this.retired) {
      this.successor?.admit();
      return;
    }
    if (this.disposed) return;
    const refused = this.scheduler.refusal(this.queue);
    if (refused) {
      this.counters.fail.count++;
      throw refused;
    }
  }

  private countSuccess(batch: number, t0: number): void {
    const c = this.counters;
    c.inferenceCount += batch;
    c.lastInference = Date.now();
    c.success.count++;
    c.success.ns += nsSince(t0);
  }

  /** The memory probe (probe.ts); doubles as the warm-up. */
  async runProbe(): Promise<ProbeResult> {
    const probe = await runProbe(this);
    this.scratchBytes = probe.scratchBytes;
    this.probe = probe;
    this.warm = true;
    return probe;
  }

  /**
   * Takes the figures an earlier probe of these very programs measured (the program cache stores
   * them), so a warm start need not run every program with the device to itself. The caller checked
   * their identity; the programs have not run yet (see warmUp).
   */
  useStoredFigures(perProgram: readonly ProbedProgram[]): ProbeResult {
    this.probe = resultOf(this.weightBytes, perProgram, true, "stored");
    this.scratchBytes = this.probe.scratchBytes;
    return this.probe;
  }

  /** True once every program has run (the probe or warmUp). */
  isWarm(): boolean {
    return this.warm;
  }

  /** Runs every program once on zeros beside the requests (probe.ts); stops once retired. */
  async warmUp(): Promise<number> {
    const ms = await warmUp(this, () => this.disposed || this.retired);
    this.warm = true;
    return ms;
  }

  /**
   * Lets the programs whose measured run is at most `maxUs` microseconds run on the HTTP thread
   * (inline/), when the backend can host its engine there too. Not for host residency (its
   * weights are meant to be uploaded per request, not kept), nor for weights over
   * INLINE_MAX_WEIGHT_BYTES (they would be held twice). A model that coalesces requests then
   * dispatches at the end of each event-loop turn (ModelQueue.gatherInTurn): an inline run is
   * over before the next request is read, so the requests read in one turn are what gathers
   * (measured on the MLP: the engine thread's round trip, about 0.3-0.7 ms under load on 2
   * cores, cost more than the b8 run it carried, 0.03 ms inline).
   * Returns each program's verdict, or null when the model does not qualify at all.
   */
  async prepareInline(maxUs: number): Promise<InlineVerdict[] | null> {
    const backend = this.backend;
    if (maxUs <= 0 || !isInlineHost(backend) || this.residency === "host") return null;
    if (this.weightBytes > INLINE_MAX_WEIGHT_BYTES || this.inlineAsked) return null;
    this.inlineAsked = true;
    const stillWanted = () => !this.retired && !this.disposed;
    const { runs, verdicts } = await prepareInlineRuns(this, backend, maxUs, stillWanted);
    if (!runs) return verdicts;
    if (!stillWanted()) {
      runs.dispose();
      return null;
    }
    runs.onDrift = (program) =>
      this.log.warn("a program left the inline path: most of its runs took over 4x the threshold", {
        program,
        maxUs,
      });
    this.placements.useInline(runs);
    this.queue.gatherInTurn = true;
    this.queue.runsInline = (variant, size) => this.execution.runsInline(variant, size);
    return verdicts;
  }

  /**
   * Measures whether coalescing changes this model's answers (batch-invariance.ts), beside the
   * requests, through the placement chosen at load. Null for a model that cannot coalesce.
   */
  async checkBatchInvariance(): Promise<BatchInvariance | null> {
    const placement = this.placements.atLoad;
    const report = await measureBatchInvariance(this.programs, (size, inputs) =>
      this.withEngineWeights((weights) =>
        placement.run(this.programs.programFor(null, size).program.executable, inputs, weights),
      ),
    );
    this.batchInvariance = report;
    return report;
  }

  /** `fn` with the model's weights resident on the engine, as a request holds them. */
  withEngineWeights<T>(fn: (weights: readonly DeviceBuffer[]) => Promise<T>): Promise<T> {
    return this.deviceLock.shared(async () => {
      const lease = await this.weights.acquire(this.ownerId);
      try {
        return await fn(lease.buffers);
      } finally {
        lease.release();
      }
    });
  }

  /** Retires this version: new requests go to `successor` (or fail as unloaded when null). */
  retire(successor: RuntimeModel | null, error?: XlaserveError): void {
    this.retired = true;
    this.successor = successor;
    this.retiredError = error ?? null;
  }

  /** Resolves once no request runs or waits on this version. */
  async drain(): Promise<void> {
    await this.queue.idle();
  }

  /** Frees the programs and the weights. Call after drain(). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (!this.retired) this.retired = true;
    this.weights.unregister(this.ownerId);
    this.scheduler.unregister(this.queue);
    this.placements.dispose();
    for (const p of this.programs.loaded()) p.executable.dispose();
  }

  isDisposed(): boolean {
    return this.disposed;
  }
}

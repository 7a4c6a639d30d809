import type { AbstractBackend, DeviceBuffer, Executable, HostTensor, Logger, MemoryStats } from "@xlaserve/core";
import { XlaserveError, uploadAll, zeros } from "@xlaserve/core";
import type { Bundle, BundleModule, TensorSpec } from "@xlaserve/core/bundle/types.ts";
import type { InferRequest, ModelStats, ServedModel } from "@xlaserve/server/contract.ts";
import { Coalescer, chooseBatchSize, concatAxis, padAxis, sliceRange } from "./batch-rows.ts";
import type { Residency } from "../memory/budget.ts";
import { type InlineCandidate, InlineRuns, type InlineVerdict, isInlineHost } from "../inline/inline-runs.ts";
import { ConcurrencyLimiter, type DeviceLock } from "../scheduler/concurrency-limiter.ts";
import type { ReplicaProgram, ReplicaSpec } from "../http-threads/protocol.ts";
import { addStats, copyStats, zeroStats } from "./stats.ts";
import type { WeightManager, WeightOwner } from "../memory/weights.ts";

export type CacheOutcome = "hit" | "miss" | "recompiled" | "uncached";

export interface LoadedProgram {
  readonly executable: Executable;
  readonly outcome: CacheOutcome;
  readonly compileMs: number;
  readonly loadMs: number;
  /** The program cache entry it came from (keys the stored probe figures); absent uncached. */
  readonly entryPath?: string;
}

/** Compiles a module or loads it from the program cache. */
export type ProgramSource = (bundle: Bundle, module: BundleModule) => Promise<LoadedProgram>;

export interface ProgramRecord {
  readonly file: string;
  readonly variant: number | null;
  readonly batchSize: number | null;
  readonly outcome: CacheOutcome;
  readonly compileMs: number;
  readonly loadMs: number;
}

export interface ProbeResult {
  /** Weight bytes resident during the probe. */
  readonly weightBytes: number;
  /** Largest run scratch over every (variant, batch size): peak minus what was resident before. */
  readonly scratchBytes: number;
  readonly perProgram: ReadonlyArray<ProbedProgram>;
  readonly peakReset: boolean;
  /** "measured" by running every program now, or "stored" from an earlier probe of the same programs. */
  readonly source: "measured" | "stored";
}

export interface ProbedProgram {
  readonly variant: number | null;
  readonly batchSize: number;
  readonly scratchBytes: number;
  readonly ms: number;
}

/** Hooks the runtime reports through (the worker binds them to the server's Metrics). */
export interface RuntimeHooks {
  queueDepth?(model: string, depth: number): void;
  computeSeconds?(model: string, seconds: number): void;
}

export interface RuntimeModelOptions {
  readonly bundle: Bundle;
  readonly backend: AbstractBackend;
  readonly platform: string;
  readonly programs: ReadonlyMap<BundleModule, LoadedProgram>;
  readonly weights: WeightManager;
  readonly residency: Residency;
  readonly hostWeights: readonly HostTensor[];
  readonly weightBytes: number;
  readonly limiter: { perModel: number; queueDepth: number };
  /** Coalesce concurrent requests into one execution (only where every tensor is batched). */
  readonly coalesce?: boolean;
  /** Coalesced executions in flight at once (default concurrency.perModel). */
  readonly executionsInFlight?: number;
  readonly deviceLock: DeviceLock;
  readonly log: Logger;
  readonly hooks?: RuntimeHooks;
  readonly generation: number;
  readonly fingerprint: string;
  readonly loadMs: number;
}

interface GroupItem {
  readonly inputs: ReadonlyMap<string, HostTensor>;
  readonly batch: number | null;
  readonly t0: number;
}

interface GroupPlan {
  readonly program: LoadedProgram;
  inputsFor(): HostTensor[];
  split(results: readonly HostTensor[]): Map<string, HostTensor>[];
}

/** A backend that runs a whole request in one call (the threaded engine). */
export interface FusedRun {
  run(executable: Executable, inputs: readonly HostTensor[], weights: readonly DeviceBuffer[]): Promise<HostTensor[]>;
}

let nextOwnerId = 0;

/**
 * Models with more weight bytes than this never run inline: their weights would be held a second
 * time on the HTTP thread, outside the weight budget (small programs have small weights anyway).
 */
export const INLINE_MAX_WEIGHT_BYTES = 8 * 1024 * 1024;

/**
 * A model is replicated on the worker's other HTTP threads when each of its programs runs within
 * this multiple of the inline threshold (1.6 ms at the default 50 us), timed on the engine thread
 * and again by each thread on its copy. The bound is loose on purpose: both timings are taken
 * while the worker is busy, and on the 16-core GPU host, under 8 HTTP threads and a 4-thread load
 * generator, the MLP's b8 run timed 207-318 us on the threads against about 40 us idle
 * (bench/results/http-reactant-threads8-2026-11-30T01-23-53Z.json, where a bound of 4x refused
 * it everywhere). It only keeps a long program from holding an HTTP thread per request.
 */
export const REPLICA_MAX_FACTOR = 32;

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
  /** Changes only through an in-place rename (the bundle folder was renamed). */
  name: string;
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
  loadMs: number;
  scratchBytes = 0;
  probe: ProbeResult | null = null;
  /** Filled by the registry: the budget figures and the state reported in extra(). */
  budgetInfo: () => Record<string, unknown> = () => ({});

  private readonly backend: AbstractBackend;
  private readonly programsByModule: ReadonlyMap<BundleModule, LoadedProgram>;
  private readonly weightsManager: WeightManager;
  private readonly hostWeights: readonly HostTensor[];
  private readonly limiter: ConcurrencyLimiter;
  /** Greedy request coalescing, for models whose every input and output has a batch axis. */
  private readonly coalescer: Coalescer<GroupItem, Map<string, HostTensor>> | null;
  private readonly deviceLock: DeviceLock;
  private readonly log: Logger;
  private readonly hooks: RuntimeHooks;
  private registered = false;
  private warm = false;
  private disposed = false;
  private successor: RuntimeModel | null = null;
  private retired = false;
  private retiredError: XlaserveError | null = null;
  /** Programs that run on the HTTP thread itself (inline-runs.ts); null until prepareInline(). */
  private inline: InlineRuns | null = null;
  private inlineAsked = false;
  /**
   * Called once, after INLINE_AFTER_REQUESTS requests, to start prepareInline() (the registry
   * sets it). Not at load: preparing stalls the event loop for about 15-30 ms (the engine's
   * import on this thread, program copies, cold first runs), and holds weights a second time;
   * only a model with traffic gains from inline runs, so only such a model pays for them.
   */
  onInlineDue: (() => void) | null = null;
  private untilInlineDue = INLINE_AFTER_REQUESTS;
  /** Called when this version is retired (a swap, an unload, shutdown). */
  onRetired: (() => void) | null = null;
  /** Each program's inline timing from prepareInline (what replicaSpec decides by); null before. */
  private inlineTimings: readonly InlineVerdict[] | null = null;

  private readonly counters = zeroStats();

  constructor(options: RuntimeModelOptions) {
    const { bundle } = options;
    this.bundle = bundle;
    this.name = bundle.name;
    this.platform = options.platform;
    this.inputs = bundle.manifest.executableInputs;
    this.outputs = bundle.manifest.executableOutputs;
    this.compiledBatchSizes = [...bundle.manifest.compiledBatchSizes].sort((a, b) => a - b);
    this.maxBatchSize = Math.max(...this.compiledBatchSizes);
    this.backend = options.backend;
    this.programsByModule = options.programs;
    this.weightsManager = options.weights;
    this.residency = options.residency;
    this.hostWeights = options.hostWeights;
    this.weightBytes = options.weightBytes;
    this.limiter = new ConcurrencyLimiter(options.limiter.perModel, options.limiter.queueDepth, `model "${this.name}"`);
    const coalescible =
      (options.coalesce ?? true) &&
      this.maxBatchSize > 1 &&
      this.inputs.length > 0 &&
      this.inputs.every((s) => s.batchAxis !== null) &&
      this.outputs.every((s) => s.batchAxis !== null);
    this.coalescer = coalescible
      ? new Coalescer<GroupItem, Map<string, HostTensor>>({
          maxBatch: this.maxBatchSize,
          maxInFlight: options.executionsInFlight ?? options.limiter.perModel,
          queueDepth: options.limiter.queueDepth,
          label: `model "${this.name}"`,
          run: (variant, items) => {
            const now = performance.now();
            for (const i of items) {
              this.counters.queue.count++;
              this.counters.queue.ns += Math.round((now - i.t0) * 1e6);
            }
            return this.runGroup(variant, items);
          },
        })
      : null;
    this.deviceLock = options.deviceLock;
    this.log = options.log;
    this.hooks = options.hooks ?? {};
    this.generation = options.generation;
    this.fingerprint = options.fingerprint;
    this.loadMs = options.loadMs;
    this.ownerId = `${this.name}#${options.generation}.${nextOwnerId++}`;
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
    await this.weightsManager.register(this.weightOwner());
    this.registered = true;
  }

  programRecords(): ProgramRecord[] {
    return [...this.programsByModule.entries()].map(([m, p]) => ({
      file: m.file,
      variant: m.variant,
      batchSize: m.batchSize,
      outcome: p.outcome,
      compileMs: p.compileMs,
      loadMs: p.loadMs,
    }));
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
    const w = this.weightsManager.state(this.ownerId);
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
      queue: this.coalescer
        ? { coalescing: true, running: this.coalescer.active, queued: this.coalescer.queued }
        : { coalescing: false, running: this.limiter.active, queued: this.limiter.queued },
      inline: this.inline ? this.inline.figures() : null,
      ...this.budgetInfo(),
    };
  }

  stats(): ModelStats {
    return copyStats(this.counters);
  }

  /** Program for a (variant, batch size): the per-size module or the module serving every size. */
  programFor(variant: number | null, batchSize: number): { module: BundleModule; program: LoadedProgram } {
    let fallback: { module: BundleModule; program: LoadedProgram } | undefined;
    for (const [module, program] of this.programsByModule) {
      if (module.variant !== variant) continue;
      if (module.batchSize === batchSize) return { module, program };
      if (module.batchSize === null) fallback = { module, program };
    }
    if (fallback) return fallback;
    throw new XlaserveError(
      "INTERNAL",
      `model "${this.name}": no program for variant ${variant}, batch size ${batchSize}`,
    );
  }

  /** Variants as the probe enumerates them. */
  variants(): (number | null)[] {
    const n = this.bundle.manifest.inputShapeVariants.length;
    return n === 0 ? [null] : [...Array(n).keys()];
  }

  /** Row-major shape of input `index` for a (variant, batch size) program. */
  inputShape(index: number, variant: number | null, batchSize: number): number[] {
    const spec = this.inputs[index];
    if (!spec) throw new XlaserveError("INTERNAL", `no input ${index}`);
    const variantShape =
      variant === null ? undefined : this.bundle.manifest.inputShapeVariants[variant]?.shapes[spec.name];
    return spec.dims.map((d, axis) => {
      if (d.kind === "fixed") return d.size;
      if (d.kind === "batch") return batchSize;
      const v = variantShape?.[axis];
      if (v === undefined || v < 0) throw new XlaserveError("INTERNAL", `input ${spec.name}: axis ${axis} has no size`);
      return v;
    });
  }

  private pickVariant(inputs: ReadonlyMap<string, HostTensor>): number | null {
    const variants = this.bundle.manifest.inputShapeVariants;
    if (variants.length === 0) return null;
    for (const variant of variants) {
      const fits = this.inputs.every((spec) => {
        const t = inputs.get(spec.name);
        const want = variant.shapes[spec.name];
        if (!t || !want) return false;
        return want.length === t.shape.length && want.every((d, i) => d === -1 || d === t.shape[i]);
      });
      if (fits) return variant.index;
    }
    const shapes = this.inputs.map((s) => `${s.name} [${inputs.get(s.name)?.shape.join(", ")}]`).join(", ");
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `model "${this.name}": input shapes ${shapes} match none of its compiled input_shapes variants`,
    );
  }

  private requestBatch(inputs: ReadonlyMap<string, HostTensor>): number | null {
    for (const spec of this.inputs) {
      if (spec.batchAxis === null) continue;
      const t = inputs.get(spec.name);
      const b = t?.shape[spec.batchAxis];
      if (b !== undefined) return b;
    }
    return null;
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
    const variant = this.pickVariant(request.inputs);
    const batch = this.requestBatch(request.inputs);
    if (this.coalescer && batch !== null) {
      const item: GroupItem = { inputs: request.inputs, batch, t0 };
      try {
        const pending = this.coalescer.submit(variant, item, request.signal);
        this.hooks.queueDepth?.(this.name, this.coalescer.queued);
        const out = await pending;
        this.countSuccess(batch, t0);
        return out;
      } catch (err) {
        c.fail.count++;
        c.fail.ns += nsSince(t0);
        throw err;
      } finally {
        this.hooks.queueDepth?.(this.name, this.coalescer.queued);
      }
    }
    // A free slot is taken without a wait; the gauge then says what it would have after one.
    if (!this.limiter.tryAcquire()) {
      this.hooks.queueDepth?.(this.name, this.limiter.queued + 1);
      try {
        await this.limiter.acquire(request.signal);
      } catch (err) {
        this.hooks.queueDepth?.(this.name, this.limiter.queued);
        c.fail.count++;
        c.fail.ns += nsSince(t0);
        throw err;
      }
    }
    this.hooks.queueDepth?.(this.name, this.limiter.queued);
    c.queue.count++;
    c.queue.ns += nsSince(t0);
    try {
      const plan = this.planGroup(variant, [{ inputs: request.inputs, batch, t0 }]);
      const [out] = this.runInlineNow(plan) ?? (await this.runLocked(plan));
      this.countSuccess(batch ?? 1, t0);
      return out as Map<string, HostTensor>;
    } catch (err) {
      c.fail.count++;
      c.fail.ns += nsSince(t0);
      throw err;
    } finally {
      this.limiter.release();
    }
  }

  private countSuccess(batch: number, t0: number): void {
    const c = this.counters;
    c.inferenceCount += batch;
    c.lastInference = Date.now();
    c.success.count++;
    c.success.ns += nsSince(t0);
  }

  /**
   * Runs requests of one variant as a single execution: their inputs concatenated along the batch
   * axis and zero-padded up to the smallest compiled size that holds them all; every output with a
   * batch axis is cut back into each request's rows. One request is the common case.
   */
  private async runGroup(variant: number | null, items: readonly GroupItem[]): Promise<Map<string, HostTensor>[]> {
    const plan = this.planGroup(variant, items);
    return this.runInlineNow(plan) ?? this.runLocked(plan);
  }

  /** What a group runs on: the program, its inputs (joined and padded) and how its outputs split back. */
  private planGroup(variant: number | null, items: readonly GroupItem[]): GroupPlan {
    const batched = items.every((i) => i.batch !== null);
    const total = batched ? items.reduce((a, i) => a + (i.batch ?? 0), 0) : null;
    if (!batched && items.length !== 1) throw new XlaserveError("INTERNAL", "only batched requests are coalesced");
    const size = total === null ? (this.compiledBatchSizes[0] ?? 1) : chooseBatchSize(this.compiledBatchSizes, total);
    if (size === undefined) {
      throw new XlaserveError(
        "INVALID_ARGUMENT",
        `model "${this.name}": batch ${total} exceeds the largest compiled batch size ${this.maxBatchSize}`,
      );
    }
    const { program } = this.programFor(variant, size);
    const inputsFor = (): HostTensor[] =>
      this.inputs.map((spec) => {
        const parts = items.map((item) => {
          const t = item.inputs.get(spec.name);
          if (!t) throw new XlaserveError("INVALID_ARGUMENT", `model "${this.name}": missing input "${spec.name}"`);
          return t;
        });
        if (spec.batchAxis === null || total === null) return parts[0] as HostTensor;
        const joined = parts.length === 1 ? (parts[0] as HostTensor) : concatAxis(parts, spec.batchAxis);
        return padAxis(joined, spec.batchAxis, size);
      });
    const split = (results: readonly HostTensor[]): Map<string, HostTensor>[] => {
      const outs = items.map(() => new Map<string, HostTensor>());
      for (let o = 0; o < this.outputs.length; o++) {
        const spec = this.outputs[o];
        const host = results[o];
        if (!spec || !host) continue;
        let offset = 0;
        items.forEach((item, k) => {
          const rows = item.batch;
          const mine =
            spec.batchAxis === null || rows === null || total === null
              ? host
              : items.length === 1 && rows === size
                ? host
                : sliceRange(host, spec.batchAxis, offset, rows);
          outs[k]?.set(spec.name, mine);
          offset += rows ?? 0;
        });
      }
      return outs;
    };
    return { program, inputsFor, split };
  }

  /**
   * The group's run now, on this thread, when its program runs inline (inline-runs.ts) and the
   * weights are resident; null otherwise (runLocked then). No device lock: the run touches only
   * this thread's engine, whose memory no probe measures.
   */
  private runInlineNow(plan: GroupPlan): Map<string, HostTensor>[] | null {
    const runs = this.inline;
    const inline = runs?.get(plan.program.executable);
    if (!runs || !inline) return null;
    const lease = this.weightsManager.leaseIfResident(this.ownerId);
    if (!lease) return null;
    const c = this.counters;
    try {
      const tIn = performance.now();
      const prepared = plan.inputsFor();
      c.computeInput.count++;
      c.computeInput.ns += nsSince(tIn);
      const tRun = performance.now();
      const results = runs.run(plan.program.executable, inline, prepared);
      this.countRun(tRun);
      return this.timedSplit(plan.split, results);
    } finally {
      lease.release();
    }
  }

  /** The group's run under the device lock, with its weights leased (loaded first when evicted). */
  private runLocked(plan: GroupPlan): Promise<Map<string, HostTensor>[]> {
    const { program, inputsFor, split } = plan;
    const c = this.counters;
    return this.deviceLock.shared(async () => {
      const tIn = performance.now();
      const lease = await this.weightsManager.acquire(this.ownerId);
      const runs = this.inline;
      const fused = (this.backend as Partial<FusedRun>).run;
      const args: DeviceBuffer[] = [];
      let results: DeviceBuffer[] = [];
      try {
        const prepared = inputsFor();
        let hostResults: HostTensor[];
        const now = runs?.get(program.executable);
        if (runs && now) {
          // The weights had to be loaded first; the run itself is inline.
          c.computeInput.count++;
          c.computeInput.ns += nsSince(tIn);
          const tRun = performance.now();
          hostResults = runs.run(program.executable, now, prepared);
          this.countRun(tRun);
        } else if (fused) {
          // One round trip to the engine thread: upload, execute, download.
          c.computeInput.count++;
          c.computeInput.ns += nsSince(tIn);
          const tRun = performance.now();
          hostResults = await fused.call(this.backend, program.executable, prepared, lease.buffers);
          this.countRun(tRun);
        } else {
          args.push(...(await uploadAll(this.backend, prepared)));
          c.computeInput.count++;
          c.computeInput.ns += nsSince(tIn);
          const tRun = performance.now();
          results = await this.backend.execute(program.executable, [...args, ...lease.buffers]);
          this.countRun(tRun);
          hostResults = await Promise.all(results.map((b) => this.backend.download(b)));
        }
        return this.timedSplit(split, hostResults);
      } finally {
        for (const b of args) b.dispose();
        for (const b of results) b.dispose();
        lease.release();
      }
    });
  }

  private timedSplit(
    split: (results: readonly HostTensor[]) => Map<string, HostTensor>[],
    results: readonly HostTensor[],
  ): Map<string, HostTensor>[] {
    const tOut = performance.now();
    const out = split(results);
    this.counters.computeOutput.count++;
    this.counters.computeOutput.ns += nsSince(tOut);
    return out;
  }

  private countRun(tRun: number): void {
    const seconds = (performance.now() - tRun) / 1000;
    this.counters.computeInfer.count++;
    this.counters.computeInfer.ns += Math.round(seconds * 1e9);
    this.counters.executionCount++;
    this.hooks.computeSeconds?.(this.name, seconds);
  }

  /**
   * The memory probe (issue 7, ARCHITECTURE rule 5): with the weights resident, reset the
   * peak-memory mark, run every (variant, batch size) on zero inputs and record the run scratch as
   * peak minus what was resident before. Runs with the device to itself, so no other model's run
   * inflates the peak. Doubles as the warm-up.
   */
  async runProbe(): Promise<ProbeResult> {
    return this.deviceLock.exclusive(async () => {
      // Loads hold the lock shared until answered; a hedged load's spare copies run on past that.
      await this.backend.settleBackground?.();
      const lease = await this.weightsManager.acquire(this.ownerId);
      const perProgram: ProbedProgram[] = [];
      let peakReset = true;
      try {
        for (const variant of this.variants()) {
          for (const size of this.compiledBatchSizes) {
            const { program } = this.programFor(variant, size);
            const before = (await this.freshMemoryStats()).inUseBytes;
            try {
              this.backend.resetPeakMemory();
            } catch {
              peakReset = false;
            }
            const t0 = performance.now();
            const args: DeviceBuffer[] = [];
            let results: DeviceBuffer[] = [];
            try {
              for (let i = 0; i < this.inputs.length; i++) {
                const spec = this.inputs[i] as TensorSpec;
                args.push(await this.backend.upload(zeros(spec.dtype, this.inputShape(i, variant, size))));
              }
              results = await this.backend.execute(program.executable, [...args, ...lease.buffers]);
            } finally {
              for (const b of results) b.dispose();
              for (const b of args) b.dispose();
            }
            const peak = (await this.freshMemoryStats()).peakBytes;
            perProgram.push({
              variant,
              batchSize: size,
              scratchBytes: Math.max(0, peak - before),
              ms: Math.round((performance.now() - t0) * 100) / 100,
            });
          }
        }
      } finally {
        lease.release();
      }
      const scratchBytes = Math.max(0, ...perProgram.map((p) => p.scratchBytes));
      this.scratchBytes = scratchBytes;
      this.probe = { weightBytes: this.weightBytes, scratchBytes, perProgram, peakReset, source: "measured" };
      this.warm = true;
      return this.probe;
    });
  }

  /** Every (variant, batch size) the probe runs, with the program serving it. */
  probeTargets(): { variant: number | null; batchSize: number; program: LoadedProgram }[] {
    return this.variants().flatMap((variant) =>
      this.compiledBatchSizes.map((batchSize) => ({
        variant,
        batchSize,
        program: this.programFor(variant, batchSize).program,
      })),
    );
  }

  /**
   * Takes the figures an earlier probe of these very programs measured (the program cache stores
   * them), so a warm start need not run every program with the device to itself. The caller checked
   * their identity; the programs have not run yet (see warmUp).
   */
  useStoredFigures(perProgram: readonly ProbedProgram[]): ProbeResult {
    const scratchBytes = Math.max(0, ...perProgram.map((p) => p.scratchBytes));
    this.scratchBytes = scratchBytes;
    this.probe = { weightBytes: this.weightBytes, scratchBytes, perProgram, peakReset: true, source: "stored" };
    return this.probe;
  }

  /** True once every program has run (the probe or warmUp). */
  isWarm(): boolean {
    return this.warm;
  }

  /**
   * Runs every program once on zeros beside the requests (a shared device lock): the first run of
   * a program pays one-time costs (GPU library initialisation, lazy kernel loads) that a request
   * should not. Needed only when the probe did not run. Stops early once the model is retired.
   */
  async warmUp(): Promise<number> {
    const t0 = performance.now();
    for (const { variant, batchSize, program } of this.probeTargets()) {
      if (this.disposed || this.retired) break;
      await this.deviceLock.shared(async () => {
        const lease = await this.weightsManager.acquire(this.ownerId);
        const args: DeviceBuffer[] = [];
        let results: DeviceBuffer[] = [];
        try {
          for (let i = 0; i < this.inputs.length; i++) {
            const spec = this.inputs[i] as TensorSpec;
            args.push(await this.backend.upload(zeros(spec.dtype, this.inputShape(i, variant, batchSize))));
          }
          results = await this.backend.execute(program.executable, [...args, ...lease.buffers]);
        } finally {
          for (const b of results) b.dispose();
          for (const b of args) b.dispose();
          lease.release();
        }
      });
    }
    this.warm = true;
    return performance.now() - t0;
  }

  /**
   * Lets the programs whose measured run is at most `maxUs` microseconds run on the HTTP thread
   * (inline-runs.ts), when the backend can host its engine there too. Not for host residency
   * (its weights are meant to be uploaded per request, not kept), nor for weights over
   * INLINE_MAX_WEIGHT_BYTES (they would be held twice), nor for a model that coalesces requests.
   * Returns each program's verdict, or null when the model does not qualify at all. Runs beside
   * the requests, which use the engine thread until it is done.
   */
  async prepareInline(maxUs: number): Promise<InlineVerdict[] | null> {
    const backend = this.backend;
    if (maxUs <= 0 || !isInlineHost(backend) || this.residency === "host") return null;
    // Coalescing gathers the requests that arrive while an execution is with the engine thread;
    // an inline run is over before the next request is read, so nothing would gather (measured
    // with --dynamic-batching: 18.5k req/s inline against 22k on the engine thread).
    if (this.coalescer) return null;
    if (this.weightBytes > INLINE_MAX_WEIGHT_BYTES || this.inlineAsked) return null;
    this.inlineAsked = true;
    const stillWanted = () => !this.retired && !this.disposed;
    const twin = await backend.localTwin();
    // One candidate per program: a module serving several batch sizes is timed at the largest.
    const largest = new Map<Executable, { variant: number | null; batchSize: number; program: LoadedProgram }>();
    for (const t of this.probeTargets()) {
      const seen = largest.get(t.program.executable);
      if (!seen || seen.batchSize < t.batchSize) largest.set(t.program.executable, t);
    }
    const candidates: InlineCandidate[] = [...largest.values()].map(({ variant, batchSize, program }) => {
      const inputs = this.inputs.map((spec, i) => zeros(spec.dtype, this.inputShape(i, variant, batchSize)));
      const probed = this.probe?.perProgram.find((p) => p.variant === variant && p.batchSize === batchSize);
      return {
        label: variant === null ? `b${batchSize}` : `v${variant} b${batchSize}`,
        executable: program.executable,
        inputs,
        probeMs: probed?.ms ?? null,
        engineTimes: (maxRuns, budgetMs) =>
          this.withEngineWeights((weights) => backend.timeRuns(program.executable, inputs, weights, maxRuns, budgetMs)),
        reference: () => this.withEngineWeights((weights) => backend.run(program.executable, inputs, weights)),
      };
    });
    const { runs, verdicts } = await InlineRuns.prepare(
      backend,
      twin,
      candidates,
      this.hostWeights,
      maxUs,
      stillWanted,
    );
    this.inlineTimings = verdicts;
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
    this.inline = runs;
    return verdicts;
  }

  /**
   * What another HTTP thread needs to run this model itself (http-threads/replica-model.ts): each
   * program serialized once, with the batch sizes it serves and the engine thread's answer for
   * zero inputs, and the weights. Null for a model with input-shape variants (a replica takes
   * every request that reaches its thread), for one not timed yet (prepareInline), and for one
   * with a program that ran far over the threshold on the engine thread (see REPLICA_MAX_FACTOR).
   * Each thread times its copy itself against the same bound (`maxRunUs`).
   */
  async replicaSpec(maxUs: number): Promise<ReplicaSpec | null> {
    const backend = this.backend;
    const verdicts = this.inlineTimings;
    if (!verdicts) return null;
    if (this.retired || this.disposed || this.bundle.manifest.inputShapeVariants.length > 0) return null;
    if (maxUs <= 0 || !isInlineHost(backend) || this.weightBytes > INLINE_MAX_WEIGHT_BYTES) return null;
    // Programs as prepareInline timed them: one per executable, labelled by its largest batch size.
    const byExecutable = new Map<Executable, number[]>();
    for (const { batchSize, program } of this.probeTargets()) {
      byExecutable.set(program.executable, [...(byExecutable.get(program.executable) ?? []), batchSize]);
    }
    const maxRunUs = maxUs * REPLICA_MAX_FACTOR;
    for (const sizes of byExecutable.values()) {
      const verdict = verdicts.find((v) => v.label === `b${Math.max(...sizes)}`);
      if (!verdict) return null;
      // Untimed (its cold probe run was long): the thread's own timing decides.
      if (verdict.engineUs !== null && verdict.engineUs > maxRunUs) return null;
    }
    const programs: ReplicaProgram[] = [];
    for (const [executable, sizes] of byExecutable) {
      const largest = Math.max(...sizes);
      const referenceInputs = this.inputs.map((spec, i) => zeros(spec.dtype, this.inputShape(i, null, largest)));
      const referenceOutputs = await this.withEngineWeights((weights) =>
        backend.run(executable, referenceInputs, weights),
      );
      programs.push({
        batchSizes: sizes,
        bytes: await backend.serialize(executable),
        referenceInputs,
        referenceOutputs,
      });
    }
    return {
      name: this.name,
      version: this.version,
      generation: this.generation,
      platform: this.platform,
      inputs: this.inputs,
      outputs: this.outputs,
      compiledBatchSizes: this.compiledBatchSizes,
      maxRunUs,
      programs,
      weights: this.hostWeights,
    };
  }

  /** Adds what a replica on another HTTP thread answered into this model's statistics. */
  addReplicaStats(d: ModelStats): void {
    addStats(this.counters, d);
  }

  /** `fn` with the model's weights resident on the engine, as a request holds them. */
  private withEngineWeights<T>(fn: (weights: readonly DeviceBuffer[]) => Promise<T>): Promise<T> {
    return this.deviceLock.shared(async () => {
      const lease = await this.weightsManager.acquire(this.ownerId);
      try {
        return await fn(lease.buffers);
      } finally {
        lease.release();
      }
    });
  }

  /** Memory figures after every earlier device call landed (a threaded engine reports lazily). */
  private async freshMemoryStats(): Promise<MemoryStats> {
    const refresh = (this.backend as { refreshMemoryStats?: () => Promise<MemoryStats> }).refreshMemoryStats;
    return refresh ? await refresh.call(this.backend) : this.backend.memoryStats();
  }

  /** Retires this version: new requests go to `successor` (or fail as unloaded when null). */
  retire(successor: RuntimeModel | null, error?: XlaserveError): void {
    const first = !this.retired;
    this.retired = true;
    this.successor = successor;
    this.retiredError = error ?? null;
    if (first) this.onRetired?.();
  }

  /** Resolves once no request runs or waits on this version. */
  async drain(): Promise<void> {
    await Promise.all([this.limiter.idle(), this.coalescer?.idle()]);
  }

  /** Frees the programs and the weights. Call after drain(). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (!this.retired) this.retired = true;
    this.weightsManager.unregister(this.ownerId);
    this.inline?.dispose();
    this.inline = null;
    for (const p of this.programsByModule.values()) p.executable.dispose();
  }

  isDisposed(): boolean {
    return this.disposed;
  }
}

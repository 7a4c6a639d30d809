import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AbstractBackend, Logger, VerifiedFiles } from "@xlaserve/core";
import { XlaserveError, asXlaserveError } from "@xlaserve/core";
import { bundleFingerprint } from "@xlaserve/core/bundle/fingerprint.ts";
import { discoverBundles, loadBundle } from "@xlaserve/core/bundle/load.ts";
import type { BundleModule } from "@xlaserve/core/bundle/types.ts";
import type {
  ModelRegistryView,
  ModelStats,
  ModelState,
  RepositoryEntry,
  ServedModel,
  ServerInfo,
} from "@xlaserve/server/contract.ts";
import { type WeightBudget, formatBytes } from "../memory/budget.ts";
import { isInlineHost } from "../inline/inline-runs.ts";
import { DeviceLock } from "../scheduler/device-lock.ts";
import { DeviceScheduler } from "../scheduler/device-scheduler.ts";
import { type SchedulingConfig, defaultScheduling, queueOptions, schedulerOptions } from "../scheduler/settings.ts";
import {
  type LoadedProgram,
  type ProbeResult,
  type ProgramSource,
  RuntimeModel,
  type RuntimeHooks,
} from "../model/runtime-model.ts";
import { type ProbeFigureStore, storeFigures, storedFigures } from "../memory/probe-figures.ts";
import { WeightManager } from "../memory/weights.ts";
import { InlineReplicas, type ReplicaHost } from "./inline-replicas.ts";
import { LoadPhases, loadedLogFields, round1 } from "./load-report.ts";
import { type MemoryOptions, WeightAdmission, budgetLogFields } from "./weight-admission.ts";

export type { ReplicaHost } from "./inline-replicas.ts";

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

interface Slot {
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

/**
 * The model repository as served: one slot per model name with its current version, its state and
 * the reason it is not READY. Loads run in the background and swap in atomically; the weight
 * budget is re-resolved in place whenever the set of models changes (issue 7).
 */
export class ModelRegistry implements ModelRegistryView {
  readonly weights: WeightManager;
  readonly deviceLock = new DeviceLock();
  /** The one scheduler of the device: every model's queue, one dispatch loop. */
  readonly scheduler: DeviceScheduler;
  private readonly scheduling: SchedulingConfig;
  private readonly slots = new Map<string, Slot>();
  private budget: WeightBudget | null = null;
  private generation = 0;
  private draining = false;
  private starting = true;
  private warming: Promise<void> = Promise.resolve();
  /** Who fits the weight budget. */
  private readonly weightFit: WeightAdmission;
  private readonly inlineReplicas: InlineReplicas;
  /** Measurements running beside the requests (shutdown waits for them). */
  private readonly background = new Set<Promise<void>>();
  /** Serializes the budget checks and swaps of concurrent loads (see doLoad). */
  private admission: Promise<void> = Promise.resolve();
  private readonly log: Logger;

  constructor(private readonly options: RegistryOptions) {
    this.log = options.log;
    this.weightFit = new WeightAdmission(options.memory, options.backend);
    this.scheduling = options.scheduling ?? defaultScheduling();
    this.scheduler = new DeviceScheduler(schedulerOptions(this.scheduling, options.backend));
    this.inlineReplicas = new InlineReplicas(options.inlineMaxUs ?? 0, options.log);
    const hooks = options.hooks ?? {};
    this.weights = new WeightManager(options.log, {
      onLoad: (model, bytes, seconds) => hooks.weightLoad?.(model, bytes, seconds),
      onEvict: (model, bytes) => hooks.weightEvict?.(model, bytes),
    });
  }

  get repository(): string {
    return resolve(this.options.repository);
  }

  // ---- ModelRegistryView -------------------------------------------------------------------

  serverInfo(): ServerInfo {
    return this.options.serverInfo();
  }

  isLive(): boolean {
    return true;
  }

  /**
   * Ready once the startup loads are done (each model READY or its failure recorded) and until
   * shutdown. A model the watcher adds later loads in the background without taking the worker
   * out of rotation: its own /ready answers for it.
   */
  isReady(): boolean {
    return !this.draining && !this.starting;
  }

  repositoryIndex(): RepositoryEntry[] {
    const names = new Set(this.slots.keys());
    let onDisk: { name: string }[] = [];
    try {
      onDisk = discoverBundles(this.repository);
    } catch {
      onDisk = [];
    }
    for (const b of onDisk) names.add(b.name);
    return [...names].sort().map((name) => {
      const slot = this.slots.get(name);
      if (!slot) return { name, version: "1", state: "UNAVAILABLE" as ModelState, reason: "unloaded" };
      const m = slot.current;
      const extra = m ? { ...m.weightFigures(), ...this.budgetExtra() } : this.budgetExtra();
      return { name, version: "1", state: slot.state, reason: slot.reason, extra };
    });
  }

  isShuttingDown(): boolean {
    return this.draining;
  }

  getModel(name: string, version?: string): ServedModel | undefined {
    if (version !== undefined && version !== "" && version !== "1") return undefined;
    return this.slots.get(name)?.current ?? undefined;
  }

  async load(name: string): Promise<void> {
    if (name.includes("/") || name.startsWith(".")) {
      throw new XlaserveError("INVALID_ARGUMENT", `"${name}" is not a model name`);
    }
    const dir = join(this.repository, name);
    if (!existsSync(join(dir, "manifest.yaml"))) {
      throw new XlaserveError("NOT_FOUND", `no bundle "${name}" in the model repository ${this.repository}`);
    }
    await this.loadFromDir(name, dir, { throwOnError: true });
  }

  async unload(name: string): Promise<void> {
    const slot = this.slots.get(name);
    if (!slot?.current) throw new XlaserveError("NOT_FOUND", `model "${name}" is not loaded`);
    await this.enqueue(slot, () => this.doUnload(slot, "unloaded"));
  }

  // ---- worker API --------------------------------------------------------------------------

  /**
   * Loads every bundle of the repository (at start), then resolves the budget once. The bundles
   * load concurrently: one's file reads and hashing overlap another's program loads and uploads
   * (probes still take the device one at a time). Models whose probe figures were stored have not
   * run yet: warmUpPending() runs them once the worker serves.
   */
  async loadAll(): Promise<void> {
    this.starting = true;
    try {
      await Promise.all(
        discoverBundles(this.repository).map((b) => this.loadFromDir(b.name, b.dir, { throwOnError: false })),
      );
      await this.settleStartupBudget();
    } finally {
      this.starting = false;
    }
    this.resolveBudget("startup");
  }

  /**
   * Startup admission, independent of the order the loads happened to finish in: with every
   * model's scratch known, the largest model whose weights have no room is refused, and the budget
   * is recomputed (its scratch no longer counts), until every remaining model fits.
   */
  private async settleStartupBudget(): Promise<void> {
    for (;;) {
      const misfit = this.weightFit
        .misfits(this.models())
        .sort((a, b) => b.model.weightBytes - a.model.weightBytes || a.model.name.localeCompare(b.model.name))[0];
      if (!misfit) return;
      const { model, roomBytes } = misfit;
      const slot = this.slots.get(model.name);
      if (!slot) return;
      slot.current = null;
      model.retire(null);
      await model.drain();
      model.dispose();
      const b = this.weightFit.budgetFor(this.models().concat(model));
      this.refuse(
        slot,
        `weights (${formatBytes(model.weightBytes)}) exceed the weight pool (${formatBytes(roomBytes)}) with every model's run scratch counted (limit ${formatBytes(b.limitBytes)}, fraction ${b.fraction}, wiggle ${b.wiggle}, max scratch ${formatBytes(b.maxScratchBytes)})`,
      );
    }
  }

  /**
   * Runs each loaded model that has not run yet once (stored probe figures skipped its probe),
   * beside the requests: a first request then finds the device's one-time initialisation done.
   */
  warmUpPending(): Promise<void> {
    const run = async () => {
      for (const m of this.models()) {
        if (this.draining) return;
        if (m.isWarm() || m.isRetired()) continue;
        try {
          const ms = await m.warmUp();
          this.log.info("model warmed up", { model: m.name, ms: round1(ms) });
        } catch (err) {
          if (!this.draining) this.log.warn("warm-up failed", { model: m.name, error: asXlaserveError(err).message });
        }
      }
    };
    this.warming = run();
    return this.warming;
  }

  /** Current model versions (for tests and the CLI). */
  models(): RuntimeModel[] {
    return [...this.slots.values()].flatMap((s) => (s.current ? [s.current] : []));
  }

  slotState(name: string): { state: ModelState; reason: string; attempted: string } | undefined {
    const s = this.slots.get(name);
    return s ? { state: s.state, reason: s.reason, attempted: s.attempted } : undefined;
  }

  currentBudget(): WeightBudget | null {
    return this.budget;
  }

  /** Names of loaded models (slots with a current version). */
  loadedNames(): string[] {
    return [...this.slots.values()].filter((s) => s.current).map((s) => s.name);
  }

  /**
   * Loads (or reloads) `name` from `dir` in the background of serving: the old version keeps
   * serving until the new one is compiled, probed and warmed up, then the swap is atomic. A failed
   * load leaves the old version serving with the error as its reason.
   */
  loadFromDir(name: string, dir: string, opts: { throwOnError: boolean; fingerprint?: string }): Promise<void> {
    let slot = this.slots.get(name);
    if (!slot) {
      slot = { name, dir, current: null, state: "LOADING", reason: "", chain: Promise.resolve(), attempted: "" };
      this.slots.set(name, slot);
    }
    const s = slot;
    return this.enqueue(s, async () => {
      try {
        await this.doLoad(s, dir, opts.fingerprint);
      } catch (err) {
        if (opts.throwOnError) throw err;
      }
    });
  }

  /** Unloads `name` after draining (the watcher: its bundle was removed). */
  async remove(name: string): Promise<void> {
    const slot = this.slots.get(name);
    if (!slot) return;
    await this.enqueue(slot, async () => {
      if (slot.current) await this.doUnload(slot, "removed");
      if (this.slots.get(name) === slot && !slot.current) this.slots.delete(name);
    });
  }

  /**
   * Renames a loaded model in place: its folder was renamed with its files unchanged, so nothing
   * is unloaded, compiled or probed. Returns false when it cannot (the caller loads instead).
   */
  async rename(from: string, to: string, dir: string): Promise<boolean> {
    const slot = this.slots.get(from);
    if (!slot?.current || this.slots.get(to)?.current) return false;
    let done = false;
    await this.enqueue(slot, async () => {
      const model = slot.current;
      if (!model || this.slots.get(to)?.current) return;
      // The other HTTP threads hold the model by name: take it back first, hand it out again after.
      this.inlineReplicas.drop(from, model.generation);
      model.name = to;
      this.slots.delete(from);
      this.slots.set(to, {
        name: to,
        dir,
        current: model,
        state: "READY",
        reason: "",
        chain: Promise.resolve(),
        attempted: slot.attempted,
      });
      done = true;
      void this.inlineReplicas.publish(model);
      await this.inlineReplicas.sync();
      this.log.info("model renamed", { model: to, from, dir, recompiled: false });
    });
    return done;
  }

  /** SIGTERM: stop accepting, drain every model, free device memory. */
  async shutdown(): Promise<void> {
    this.draining = true;
    await this.warming; // stops after the run in progress
    const err = new XlaserveError("SHUTTING_DOWN", "the worker is shutting down");
    const current = this.models();
    for (const m of current) m.retire(null, err);
    await this.inlineReplicas.settled(); // each stops at its next step once retired
    await Promise.allSettled([...this.background]);
    await Promise.all(current.map((m) => m.drain()));
    for (const m of current) m.dispose();
    for (const s of this.slots.values()) {
      s.current = null;
      s.state = "UNAVAILABLE";
      s.reason = "worker shut down";
    }
  }

  // ---- internals ---------------------------------------------------------------------------

  private enqueue(slot: Slot, fn: () => Promise<void>): Promise<void> {
    const run = slot.chain.then(fn, fn);
    slot.chain = run.catch(() => {});
    return run;
  }

  /** Re-resolves the budget over the current models, in place. */
  resolveBudget(cause: BudgetCause): WeightBudget {
    const models = this.models();
    const budget = this.weightFit.budgetFor(models);
    this.budget = budget;
    this.weights.setBudget(budget);
    this.options.hooks?.budgetResolved?.(budget);
    if (!this.starting) {
      this.log.info("weight budget resolved", budgetLogFields(cause, budget, models));
    }
    return budget;
  }

  budgetExtra(): Record<string, unknown> {
    const b = this.budget;
    return {
      budget: b
        ? {
            limitBytes: b.limitBytes,
            poolBytes: b.poolBytes,
            onDemandBytes: b.onDemandBytes,
            pinnedBytes: b.pinnedBytes,
            maxScratchBytes: b.maxScratchBytes,
            residentOnDemandBytes: this.weights.residentOnDemandBytes,
          }
        : null,
    };
  }

  private refuse(slot: Slot, reason: string): XlaserveError {
    const err = new XlaserveError("UNAVAILABLE", reason, { model: slot.name, refused: true });
    if (slot.current) {
      slot.state = "READY";
      slot.reason = `new version refused: ${reason}`;
    } else {
      slot.state = "UNAVAILABLE";
      slot.reason = reason;
    }
    this.log.error("model refused", { model: slot.name, reason });
    return err;
  }

  private async doLoad(slot: Slot, dir: string, fingerprint?: string): Promise<void> {
    const name = slot.name;
    const t0 = performance.now();
    const fp = fingerprint ?? bundleFingerprint(dir).key;
    slot.attempted = fp;
    slot.dir = dir;
    const old = slot.current;
    if (!old) {
      slot.state = "LOADING";
      slot.reason = "";
    }
    const programs = new Map<BundleModule, LoadedProgram>();
    let model: RuntimeModel | null = null;
    let releaseAdmission: (() => void) | null = null;
    const phases = new LoadPhases();
    try {
      const verifiedWeights = this.options.verifiedWeights;
      const bundle = await loadBundle(dir, {
        repository: this.repository,
        followLinksOutside: this.options.followLinksOutside ?? false,
        ...(verifiedWeights ? { verifiedWeights } : {}),
      });
      phases.mark("readMs");
      // A model's programs load together: the PJRT backend loads each on a loader thread of its
      // own, and loads overlap (bench/results/pjrt-parallel-loads-*). Shared with requests,
      // exclusive of probes: compile scratch never lands in a probe's peak.
      const settled = await Promise.allSettled(
        bundle.modules.map((module) => this.deviceLock.shared(() => this.options.programs(bundle, module))),
      );
      // Every program that did load is kept in the map first, so a failure below frees them all.
      for (const [i, s] of settled.entries()) {
        if (s.status === "fulfilled") programs.set(bundle.modules[i] as BundleModule, s.value);
      }
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
      if (failed) throw failed.reason;
      for (const program of programs.values()) this.options.hooks?.programLoaded?.(name, program);
      phases.mark("programsMs");
      // From here to the swap, one model at a time: each admission sees the models admitted before
      // it, as when bundles loaded one by one (their reads and program loads still overlap).
      releaseAdmission = await this.admit();
      // Views of the bundle's private copy of the file (read, not mapped): nothing on disk can
      // change them.
      const hostWeights = bundle.weights.argumentOrder.map((w) => bundle.weights.tensor(w));
      const weightBytes = hostWeights.reduce((a, t) => a + t.data.byteLength, 0);
      const residency = this.weightFit.residencyFor(name);

      // Refuse before uploading anything when the weights alone cannot fit the pool. At start the
      // other models' scratch and pins are not all known yet (loads overlap in any order): only
      // weights no budget could hold are refused here; settleStartupBudget() decides the rest.
      const others = this.models().filter((m) => m.name !== name);
      const pre = this.starting ? this.weightFit.budgetFor([]) : this.weightFit.budgetFor(others);
      const room = this.weightFit.roomFor(pre, residency, 0);
      if (weightBytes > room) {
        throw this.refuse(
          slot,
          `weights (${formatBytes(weightBytes)}) exceed the weight pool (${formatBytes(room)}${residency === "pinned" && pre.pinnedBytes > 0 ? " left after pinned models" : ""}; limit ${formatBytes(pre.limitBytes)}, fraction ${pre.fraction}, wiggle ${pre.wiggle}, max scratch ${formatBytes(pre.maxScratchBytes)})`,
        );
      }

      model = new RuntimeModel({
        bundle,
        backend: this.options.backend,
        platform: this.options.platform,
        programs,
        weights: this.weights,
        residency,
        hostWeights,
        weightBytes,
        scheduler: this.scheduler,
        queue: queueOptions(name, this.scheduling, this.options.concurrency, this.options.backend),
        deviceLock: this.deviceLock,
        log: this.log.child({ model: name }),
        hooks: this.options.hooks,
        generation: ++this.generation,
        fingerprint: fp,
        loadMs: 0,
      });
      model.budgetInfo = () => this.budgetExtra();
      phases.mark("programsMs");
      await model.registerWeights();
      phases.mark("uploadMs");
      // Figures an earlier probe of these very programs measured stand in for the probe; else
      // probe now (rule 5: the peak is reset before each run) and store what it measured.
      const figures = this.options.probeFigures;
      const stored = figures ? storedFigures(model, figures) : null;
      let probe: ProbeResult;
      if (stored) {
        probe = model.useStoredFigures(stored);
        // A reload swaps in warm; at start the warm-up runs once the worker serves (warmUpPending).
        if (!this.starting) {
          await model.warmUp();
          phases.mark("warmUpMs");
        }
      } else {
        probe = await model.runProbe(); // also the warm-up: every program has run once
        phases.mark("probeMs");
        if (figures) {
          try {
            storeFigures(model, figures);
          } catch (err) {
            this.log.warn("probe figures not stored", { model: name, error: asXlaserveError(err).message });
          }
        }
      }

      // Re-check with this model's measured scratch included: admitting it must leave every
      // model's weights room (its scratch may shrink the pool under a model admitted before).
      if (!this.starting) {
        const misfit = this.weightFit.misfits([...others, model])[0];
        if (misfit) {
          throw this.refuse(
            slot,
            misfit.model === model
              ? `weights (${formatBytes(weightBytes)}) exceed the weight pool (${formatBytes(misfit.roomBytes)}) once its run scratch (${formatBytes(probe.scratchBytes)}) is counted`
              : `its run scratch (${formatBytes(probe.scratchBytes)}) would shrink the weight pool to ${formatBytes(misfit.roomBytes)}, too small for the weights of ${misfit.model.name} (${formatBytes(misfit.model.weightBytes)})`,
          );
        }
      }

      if (this.draining) throw new XlaserveError("SHUTTING_DOWN", "the worker is shutting down");
      const loadMs = performance.now() - t0;
      model.loadMs = loadMs;
      // The atomic swap: new requests go to the new version, in-flight ones finish on the old.
      slot.current = model;
      slot.state = "READY";
      slot.reason = "";
      if (old) {
        old.retire(model);
        model.inheritStats(old);
      }
      this.log.info(old ? "model reloaded" : "model loaded", loadedLogFields(model, loadMs, phases));
      if (!this.starting) this.resolveBudget(old ? "replace" : "load");
      const loaded = model;
      if ((this.options.inlineMaxUs ?? 0) > 0 && isInlineHost(this.options.backend)) {
        loaded.onInlineDue = () => this.inlineReplicas.prepare(loaded);
      }
      loaded.onRetired = () => this.inlineReplicas.drop(loaded.name, loaded.generation);
      if (this.options.measureBatchInvariance) this.checkInvariance(loaded);
      if (old) {
        void old.drain().then(() => {
          loaded.foldPredecessor();
          old.dispose();
          if (!this.starting && !this.draining) this.weights.enforce();
        });
      }
    } catch (err) {
      if (model) {
        await model.drain();
        model.dispose();
      } else {
        for (const p of programs.values()) p.executable.dispose();
      }
      const e = asXlaserveError(err);
      if (e.details.refused !== true) {
        if (old) {
          slot.state = "READY";
          slot.reason = `reload failed, still serving the previous version: ${e.code}: ${e.message}`;
        } else {
          slot.state = "UNAVAILABLE";
          slot.reason = `${e.code}: ${e.message}`;
        }
        this.log.error(old ? "model reload failed" : "model load failed", {
          model: name,
          code: e.code,
          error: e.message,
          serving: old ? "previous version" : "nothing",
        });
      }
      throw e;
    } finally {
      releaseAdmission?.();
    }
  }

  /** The worker's other HTTP threads, which run the models that qualify themselves (inline-replicas.ts). */
  attachReplicaHost(host: ReplicaHost | null): void {
    this.inlineReplicas.attach(host, this.models());
  }

  /** A replica's statistics, added into the model's own when it is still that version. */
  addReplicaStats(name: string, generation: number, stats: ModelStats): void {
    const current = this.slots.get(name)?.current;
    if (current && current.generation === generation) current.addReplicaStats(stats);
  }

  /**
   * Whether coalescing changes the model's answers, measured beside the requests once it serves
   * and logged ("batch invariance"), so operators turn coalescing on knowing what it costs.
   */
  private checkInvariance(model: RuntimeModel): void {
    const job = model
      .checkBatchInvariance()
      .then((report) => {
        if (!report) return;
        this.log.info("batch invariance", {
          model: model.name,
          invariant: report.invariant,
          // The largest difference is what a person weighs coalescing by; each check in detail.
          maxAbsDiff: Math.max(0, ...report.checks.map((c) => c.maxAbsDiff)),
          coalescing: this.options.concurrency.dynamicBatching ?? false,
          detail: { rows: report.rows, checks: report.checks, ms: report.ms },
        });
      })
      .catch((err) => {
        if (!model.isRetired()) {
          this.log.warn("batch invariance not measured", { model: model.name, error: asXlaserveError(err).message });
        }
      })
      .finally(() => this.background.delete(job));
    this.background.add(job);
  }

  /** Waits for the admission turn; call the returned function to pass it on. */
  private async admit(): Promise<() => void> {
    let release = () => {};
    const turn = new Promise<void>((r) => {
      release = r;
    });
    const before = this.admission;
    this.admission = before.then(() => turn);
    await before;
    return release;
  }

  private async doUnload(slot: Slot, why: string): Promise<void> {
    const old = slot.current;
    if (!old) return;
    slot.state = "UNLOADING";
    slot.current = null;
    old.retire(null);
    // Unloaded means unloaded on every HTTP thread too: their copies are dropped before this returns.
    await this.inlineReplicas.sync();
    await old.drain();
    old.dispose();
    slot.state = "UNAVAILABLE";
    slot.reason = why;
    this.log.info("model unloaded", { model: slot.name, reason: why });
    if (!this.draining) this.resolveBudget("remove");
  }
}

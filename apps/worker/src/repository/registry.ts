import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "@xlaserve/core";
import { XlaserveError, asXlaserveError } from "@xlaserve/core";
import { discoverBundles } from "@xlaserve/core/bundle/load.ts";
import type {
  ModelRegistryView,
  ModelState,
  RepositoryEntry,
  ServedModel,
  ServerInfo,
} from "@xlaserve/server/contract.ts";
import { type WeightBudget, formatBytes } from "../memory/budget.ts";
import { DeviceLock } from "../scheduler/device-lock.ts";
import { DeviceScheduler } from "../scheduler/device-scheduler.ts";
import { type SchedulingConfig, defaultScheduling, schedulerOptions } from "../scheduler/settings.ts";
import type { RuntimeModel } from "../model/runtime-model.ts";
import { WeightManager } from "../memory/weights.ts";
import { InlinePreparation } from "./inline-preparation.ts";
import { round1 } from "./load-report.ts";
import { WeightAdmission, budgetLogFields } from "./weight-admission.ts";
import { AdmissionTurn } from "./admission-turn.ts";
import type { BudgetCause, RegistryOptions, Slot } from "./registry-options.ts";
import { enqueueOnSlot, refuseSlot } from "./slot-states.ts";
import { type LoadHost, loadVersion } from "./load-version.ts";

export type { BudgetCause, RegistryHooks, RegistryOptions } from "./registry-options.ts";

/**
 * The model repository as served: one slot per model name with its current version, its state and
 * the reason it is not READY. Loads run in the background and swap in atomically; the weight
 * budget is re-resolved in place whenever the set of models changes.
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
  private readonly inlinePreparation: InlinePreparation;
  /** Measurements running beside the requests (shutdown waits for them). */
  private readonly background = new Set<Promise<void>>();
  /** Serializes the budget checks and swaps of concurrent loads (see load-version.ts). */
  private readonly admission = new AdmissionTurn();
  private readonly log: Logger;

  constructor(private readonly options: RegistryOptions) {
    this.log = options.log;
    this.weightFit = new WeightAdmission(options.memory, options.backend);
    this.scheduling = options.scheduling ?? defaultScheduling();
    this.scheduler = new DeviceScheduler(schedulerOptions(this.scheduling, options.backend));
    this.inlinePreparation = new InlinePreparation(options.inlineMaxUs ?? 0, options.log);
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
        await loadVersion(this.loadHost(), s, dir, opts.fingerprint);
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
    await this.inlinePreparation.settled(); // each stops at its next step once retired
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

  /** This registry as loadVersion sees it (load-version.ts). */
  private loadHost(): LoadHost {
    const r = this;
    return {
      options: r.options,
      repository: r.repository,
      deviceLock: r.deviceLock,
      weights: r.weights,
      scheduler: r.scheduler,
      scheduling: r.scheduling,
      weightFit: r.weightFit,
      inlinePreparation: r.inlinePreparation,
      admission: r.admission,
      background: r.background,
      log: r.log,
      get starting() {
        return r.starting;
      },
      get draining() {
        return r.draining;
      },
      models: () => r.models(),
      nextGeneration: () => ++r.generation,
      budgetExtra: () => r.budgetExtra(),
      resolveBudget: (cause) => r.resolveBudget(cause),
    };
  }

  private enqueue(slot: Slot, fn: () => Promise<void>): Promise<void> {
    return enqueueOnSlot(slot, fn);
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
    return refuseSlot(slot, reason, this.log);
  }

  private async doUnload(slot: Slot, why: string): Promise<void> {
    const old = slot.current;
    if (!old) return;
    slot.state = "UNLOADING";
    slot.current = null;
    old.retire(null);
    await old.drain();
    old.dispose();
    slot.state = "UNAVAILABLE";
    slot.reason = why;
    this.log.info("model unloaded", { model: slot.name, reason: why });
    if (!this.draining) this.resolveBudget("remove");
  }
}

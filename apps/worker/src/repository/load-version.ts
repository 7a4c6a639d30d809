import type { Logger } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";
import { bundleFingerprint } from "@xlaserve/core/bundle/fingerprint.ts";
import { loadBundle } from "@xlaserve/core/bundle/load.ts";
import type { BundleModule } from "@xlaserve/core/bundle/types.ts";
import { isInlineHost } from "../inline/inline-runs.ts";
import { type WeightBudget, formatBytes } from "../memory/budget.ts";
import type { WeightManager } from "../memory/weights.ts";
import { type LoadedProgram, RuntimeModel } from "../model/runtime-model.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";
import type { DeviceScheduler } from "../scheduler/device-scheduler.ts";
import { type SchedulingConfig, queueOptions } from "../scheduler/settings.ts";
import type { AdmissionTurn } from "./admission-turn.ts";
import type { InlinePreparation } from "./inline-preparation.ts";
import { reportBatchInvariance } from "./invariance-report.ts";
import { LoadPhases, loadedLogFields } from "./load-report.ts";
import { probeOrReuse } from "./probe-step.ts";
import { loadPrograms } from "./program-loads.ts";
import type { BudgetCause, RegistryOptions, Slot } from "./registry-options.ts";
import { recordLoadFailure, refuseSlot } from "./slot-states.ts";
import type { WeightAdmission } from "./weight-admission.ts";

/** What loading a version needs of its registry. */
export interface LoadHost {
  readonly options: RegistryOptions;
  readonly repository: string;
  readonly deviceLock: DeviceLock;
  readonly weights: WeightManager;
  readonly scheduler: DeviceScheduler;
  readonly scheduling: SchedulingConfig;
  readonly weightFit: WeightAdmission;
  readonly inlinePreparation: InlinePreparation;
  readonly admission: AdmissionTurn;
  /** Measurements running beside the requests (shutdown waits for them). */
  readonly background: Set<Promise<void>>;
  readonly log: Logger;
  /** The worker is starting: the startup budget settles admission once every load is done. */
  readonly starting: boolean;
  readonly draining: boolean;
  models(): RuntimeModel[];
  nextGeneration(): number;
  budgetExtra(): Record<string, unknown>;
  resolveBudget(cause: BudgetCause): WeightBudget;
}

/**
 * Loads one version of the slot's model from `dir`: the bundle read, its programs loaded, the
 * weights admitted against the budget (before anything is uploaded, and again with the probe's
 * measured scratch), uploaded and probed, then swapped in atomically (new requests go to it, the
 * old version's in-flight ones finish there). A failure leaves the previous version serving.
 */
export async function loadVersion(host: LoadHost, slot: Slot, dir: string, fingerprint?: string): Promise<void> {
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
    const verifiedWeights = host.options.verifiedWeights;
    const bundle = await loadBundle(dir, {
      repository: host.repository,
      followLinksOutside: host.options.followLinksOutside ?? false,
      ...(verifiedWeights ? { verifiedWeights } : {}),
    });
    phases.mark("readMs");
    // A model's programs load together: the PJRT backend loads each on a loader thread of its
    // own, and loads overlap (bench/results/pjrt-parallel-loads-*).
    await loadPrograms(bundle, host.options.programs, host.deviceLock, programs);
    for (const program of programs.values()) host.options.hooks?.programLoaded?.(name, program);
    phases.mark("programsMs");
    // From here to the swap, one model at a time: each admission sees the models admitted before
    // it, as when bundles loaded one by one (their reads and program loads still overlap).
    releaseAdmission = await host.admission.wait();
    // Views of the bundle's private copy of the file (read, not mapped): nothing on disk can
    // change them.
    const hostWeights = bundle.weights.argumentOrder.map((w) => bundle.weights.tensor(w));
    const weightBytes = hostWeights.reduce((a, t) => a + t.data.byteLength, 0);
    const residency = host.weightFit.residencyFor(name);

    // Refuse before uploading anything when the weights alone cannot fit the pool. At start the
    // other models' scratch and pins are not all known yet (loads overlap in any order): only
    // weights no budget could hold are refused here; settleStartupBudget() decides the rest.
    const others = host.models().filter((m) => m.name !== name);
    const pre = host.starting ? host.weightFit.budgetFor([]) : host.weightFit.budgetFor(others);
    const room = host.weightFit.roomFor(pre, residency, 0);
    if (weightBytes > room) {
      throw refuseSlot(
        slot,
        `weights (${formatBytes(weightBytes)}) exceed the weight pool (${formatBytes(room)}${residency === "pinned" && pre.pinnedBytes > 0 ? " left after pinned models" : ""}; limit ${formatBytes(pre.limitBytes)}, fraction ${pre.fraction}, wiggle ${pre.wiggle}, max scratch ${formatBytes(pre.maxScratchBytes)})`,
        host.log,
      );
    }

    model = new RuntimeModel({
      bundle,
      backend: host.options.backend,
      platform: host.options.platform,
      programs,
      weights: host.weights,
      residency,
      hostWeights,
      weightBytes,
      scheduler: host.scheduler,
      queue: queueOptions(name, host.scheduling, host.options.concurrency, host.options.backend),
      deviceLock: host.deviceLock,
      log: host.log.child({ model: name }),
      hooks: host.options.hooks,
      generation: host.nextGeneration(),
      fingerprint: fp,
      loadMs: 0,
    });
    model.budgetInfo = () => host.budgetExtra();
    phases.mark("programsMs");
    await model.registerWeights();
    phases.mark("uploadMs");
    const probe = await probeOrReuse(model, host.options.probeFigures, !host.starting, phases, host.log);

    // Re-check with this model's measured scratch included: admitting it must leave every
    // model's weights room (its scratch may shrink the pool under a model admitted before).
    if (!host.starting) {
      const misfit = host.weightFit.misfits([...others, model])[0];
      if (misfit) {
        throw refuseSlot(
          slot,
          misfit.model === model
            ? `weights (${formatBytes(weightBytes)}) exceed the weight pool (${formatBytes(misfit.roomBytes)}) once its run scratch (${formatBytes(probe.scratchBytes)}) is counted`
            : `its run scratch (${formatBytes(probe.scratchBytes)}) would shrink the weight pool to ${formatBytes(misfit.roomBytes)}, too small for the weights of ${misfit.model.name} (${formatBytes(misfit.model.weightBytes)})`,
          host.log,
        );
      }
    }

    if (host.draining) throw new XlaserveError("SHUTTING_DOWN", "the worker is shutting down");
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
    host.log.info(old ? "model reloaded" : "model loaded", loadedLogFields(model, loadMs, phases));
    if (!host.starting) host.resolveBudget(old ? "replace" : "load");
    const loaded = model;
    if ((host.options.inlineMaxUs ?? 0) > 0 && isInlineHost(host.options.backend)) {
      loaded.onInlineDue = () => host.inlinePreparation.prepare(loaded);
    }
    if (host.options.measureBatchInvariance) {
      const job = reportBatchInvariance(loaded, host.log, host.options.concurrency.dynamicBatching ?? false).finally(
        () => host.background.delete(job),
      );
      host.background.add(job);
    }
    if (old) {
      void old.drain().then(() => {
        loaded.foldPredecessor();
        old.dispose();
        if (!host.starting && !host.draining) host.weights.enforce();
      });
    }
  } catch (err) {
    if (model) {
      await model.drain();
      model.dispose();
    } else {
      for (const p of programs.values()) p.executable.dispose();
    }
    throw recordLoadFailure(slot, old !== null, err, host.log);
  } finally {
    releaseAdmission?.();
  }
}

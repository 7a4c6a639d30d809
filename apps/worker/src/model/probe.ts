import type { AbstractBackend, DeviceBuffer, MemoryStats } from "@xlaserve/core";
import type { WeightManager } from "../memory/weights.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";
import type { ModelPrograms } from "./model-programs.ts";
import type { LoadedProgram } from "./program-types.ts";

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

/** What a probe or a warm-up runs a model's programs with. */
export interface ProbeSubject {
  readonly backend: AbstractBackend;
  readonly deviceLock: DeviceLock;
  readonly weights: WeightManager;
  readonly ownerId: string;
  readonly programs: ModelPrograms;
  readonly weightBytes: number;
}

/**
 * The memory probe (ARCHITECTURE rule 5): with the weights resident, reset the peak-memory mark,
 * run every (variant, batch size) on zero inputs and record the run scratch as peak minus what
 * was resident before. Runs with the device to itself, so no other model's run inflates the peak.
 * Doubles as the warm-up.
 */
export function runProbe(m: ProbeSubject): Promise<ProbeResult> {
  const { backend } = m;
  return m.deviceLock.exclusive(async () => {
    // Loads hold the lock shared until answered; a hedged load's spare copies run on past that.
    await backend.settleBackground?.();
    const lease = await m.weights.acquire(m.ownerId);
    const perProgram: ProbedProgram[] = [];
    let peakReset = true;
    try {
      for (const { variant, batchSize, program } of m.programs.targets()) {
        const before = (await freshMemoryStats(backend)).inUseBytes;
        try {
          backend.resetPeakMemory();
        } catch {
          peakReset = false;
        }
        const t0 = performance.now();
        await runOnZeros(m, variant, batchSize, program, lease.buffers);
        const peak = (await freshMemoryStats(backend)).peakBytes;
        perProgram.push({
          variant,
          batchSize,
          scratchBytes: Math.max(0, peak - before),
          ms: Math.round((performance.now() - t0) * 100) / 100,
        });
      }
    } finally {
      lease.release();
    }
    return resultOf(m.weightBytes, perProgram, peakReset, "measured");
  });
}

/** The probe's figures from a list of per-program figures. */
export function resultOf(
  weightBytes: number,
  perProgram: readonly ProbedProgram[],
  peakReset: boolean,
  source: ProbeResult["source"],
): ProbeResult {
  const scratchBytes = Math.max(0, ...perProgram.map((p) => p.scratchBytes));
  return { weightBytes, scratchBytes, perProgram, peakReset, source };
}

/**
 * Runs every program once on zeros beside the requests (a shared device lock): the first run of
 * a program pays one-time costs (GPU library initialisation, lazy kernel loads) that a request
 * should not. Needed only when the probe did not run. `stop` ends it early (a retired model).
 */
export async function warmUp(m: ProbeSubject, stop: () => boolean): Promise<number> {
  const t0 = performance.now();
  for (const { variant, batchSize, program } of m.programs.targets()) {
    if (stop()) break;
    await m.deviceLock.shared(async () => {
      const lease = await m.weights.acquire(m.ownerId);
      try {
        await runOnZeros(m, variant, batchSize, program, lease.buffers);
      } finally {
        lease.release();
      }
    });
  }
  return performance.now() - t0;
}

async function runOnZeros(
  m: ProbeSubject,
  variant: number | null,
  batchSize: number,
  program: LoadedProgram,
  weights: readonly DeviceBuffer[],
): Promise<void> {
  const args: DeviceBuffer[] = [];
  let results: DeviceBuffer[] = [];
  try {
    for (const t of m.programs.zeroInputs(variant, batchSize)) args.push(await m.backend.upload(t));
    results = await m.backend.execute(program.executable, [...args, ...weights]);
  } finally {
    for (const b of results) b.dispose();
    for (const b of args) b.dispose();
  }
}

/** Memory figures after every earlier device call landed (a threaded engine reports lazily). */
function freshMemoryStats(backend: AbstractBackend): Promise<MemoryStats> | MemoryStats {
  return backend.refreshMemoryStats ? backend.refreshMemoryStats() : backend.memoryStats();
}

import type { Bundle, BundleModule } from "@xlaserve/core/bundle/types.ts";
import type { LoadedProgram, ProgramSource } from "../model/runtime-model.ts";
import type { DeviceLock } from "../scheduler/device-lock.ts";

/**
 * Every program of a bundle, loaded together under the device lock (shared with requests,
 * exclusive of probes: compile scratch never lands in a probe's peak). Each program that loads is
 * put in `into` before any failure is thrown, so the caller frees them all on error.
 */
export async function loadPrograms(
  bundle: Bundle,
  source: ProgramSource,
  deviceLock: DeviceLock,
  into: Map<BundleModule, LoadedProgram>,
): Promise<void> {
  const settled = await Promise.allSettled(
    bundle.modules.map((module) => deviceLock.shared(() => source(bundle, module))),
  );
  for (const [i, s] of settled.entries()) {
    if (s.status === "fulfilled") into.set(bundle.modules[i] as BundleModule, s.value);
  }
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}

import type { ProbeResult } from "@xlaserve/core/engine/select.ts";
import { FileMemo } from "./file-memo.ts";

/**
 * Remembers which PJRT plugin files passed the engine selector's probe, so a restart skips it.
 * The probe runs in a child process (a plugin that crashes while loading cannot take the worker
 * down) and costs a process start plus a load of the plugin. A file that passed once, unchanged
 * and under the same bindings (`bindings`), passes again; the worker's own load of the plugin still
 * gates its function table (ARCHITECTURE rule 1). Failures are never remembered.
 */
export function memoizedProbe(
  probe: (path: string) => ProbeResult | Promise<ProbeResult>,
  stateDir: string,
  bindings: string,
): (path: string) => Promise<ProbeResult> {
  const memo = new FileMemo<ProbeResult>(stateDir, "pjrt-probe.json");
  return async (path) => {
    const known = memo.get(path, bindings);
    if (known?.ok) return known;
    const result = await probe(path);
    if (result.ok) memo.set(path, bindings, result);
    return result;
  };
}

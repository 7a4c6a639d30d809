/**
 * Pinning a CPU benchmark: the process re-executes itself once under `taskset -c CORES` with
 * OPENBLAS_NUM_THREADS set (OpenBLAS reads it when it loads), so the engine and the XLA anchor
 * it spawns (which inherits the affinity) share the same cores.
 */
import { allowedCpus, expandCpuList } from "./current-cpu.ts";
import { blasEnv } from "./proc.ts";

export function currentAffinity(): string {
  return allowedCpus()?.join(",") ?? "";
}

export async function hasTaskset(): Promise<boolean> {
  try {
    const p = Bun.spawn(["taskset", "-V"], { stdout: "ignore", stderr: "ignore" });
    return (await p.exited) === 0;
  } catch {
    return false;
  }
}

/**
 * Re-runs this process pinned to `cores` ("none": unpinned) with `blasThreads` BLAS threads and
 * exits with its status, unless it already runs so. Returns only in the process that measures.
 */
export async function reexecPinned(cores: string, blasThreads: number): Promise<void> {
  if (process.env.XLASERVE_BENCH_REEXEC) return;
  const pinned = cores !== "none";
  const needPin = pinned && currentAffinity() !== expandCpuList(cores).join(",");
  const needBlas = process.env.OPENBLAS_NUM_THREADS !== String(blasThreads);
  if (!needPin && !needBlas) return;
  const prefix = needPin && (await hasTaskset()) ? ["taskset", "-c", cores] : [];
  if (needPin && prefix.length === 0) console.warn("taskset not found: running unpinned");
  const child = Bun.spawn([...prefix, process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, ...blasEnv(blasThreads), XLASERVE_BENCH_REEXEC: "1" },
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await child.exited);
}

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { probePjrtPlugin } from "../../../packages/backend-pjrt/src/probe.ts";

/**
 * Finds a GPU PJRT plugin: env XLASERVE_PJRT_PLUGIN, else the jax-cuda13-pjrt (or cuda12)
 * plugin of the local Python. Returns the path, or why there is none (the GPU tests then skip
 * themselves and print that reason).
 */
export async function findGpuPlugin(): Promise<{ path: string } | { skip: string }> {
  const candidates: string[] = [];
  if (process.env.XLASERVE_PJRT_PLUGIN) candidates.push(process.env.XLASERVE_PJRT_PLUGIN);
  for (const pkg of ["xla_cuda13", "xla_cuda12"]) {
    try {
      const r = Bun.spawnSync(["python3", "-c", `import jax_plugins.${pkg} as p; print(p.__file__)`], {
        stderr: "ignore",
      });
      const file = r.stdout.toString().trim();
      if (r.exitCode === 0 && file) candidates.push(join(dirname(file), "xla_cuda_plugin.so"));
    } catch {
      // no python3
    }
  }
  const found = candidates.find((c) => existsSync(c));
  if (!found) return { skip: "no GPU PJRT plugin found (set XLASERVE_PJRT_PLUGIN or install jax-cuda13-pjrt)" };
  const probe = await probePjrtPlugin(found);
  if (!probe.ok) return { skip: `the PJRT plugin does not load: ${probe.code}: ${probe.message}` };
  return { path: found };
}

let cached: Promise<{ path: string } | { skip: string }> | undefined;

/** The plugin lookup, once per process; prints the skip reason the first time. */
export function gpuPlugin(): Promise<{ path: string } | { skip: string }> {
  cached ??= findGpuPlugin().then((r) => {
    if ("skip" in r) console.warn(`[tests/gpu] skipped: ${r.skip}`);
    return r;
  });
  return cached;
}

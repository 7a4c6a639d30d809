/** Finding the PJRT plugin for the GPU benchmarks. */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { python } from "./anchor.ts";

/**
 * The plugin path: --plugin, else $XLASERVE_PJRT_PLUGIN, else the jax-cuda13-pjrt package's
 * xla_cuda_plugin.so as the host's python3 finds it. Throws with what was tried.
 */
export function findCudaPlugin(explicit?: string): string {
  const tried: string[] = [];
  for (const candidate of [explicit, process.env.XLASERVE_PJRT_PLUGIN]) {
    if (!candidate) continue;
    if (existsSync(candidate)) return candidate;
    tried.push(`${candidate} (missing)`);
  }
  try {
    const dir = execFileSync(
      python(),
      ["-c", "import jax_plugins.xla_cuda13 as p, os; print(os.path.dirname(p.__file__))"],
      { encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] },
    ).trim();
    const path = join(dir, "xla_cuda_plugin.so");
    if (existsSync(path)) return path;
    tried.push(`${path} (missing)`);
  } catch (err) {
    tried.push(`python3 jax_plugins.xla_cuda13 (${String(err).split("\n")[0]})`);
  }
  throw new Error(`no PJRT CUDA plugin found; tried: ${tried.join("; ")}`);
}

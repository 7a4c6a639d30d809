import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";

/**
 * The GPUs to run one worker each on, without loading any GPU library, in this order:
 * XLASERVE_GPUS (a count, or a comma list of ordinals or GPU UUIDs; 0 means a CPU node), a
 * CUDA_VISIBLE_DEVICES already set on the container (one worker per entry), nvidia-smi's list,
 * then /dev/nvidiaN. Empty: no GPUs. Selectors stay strings, so UUIDs pass through verbatim.
 */
export interface GpuSources {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where device nodes are; default /dev. */
  readonly devDir?: string;
  /** nvidia-smi's `--query-gpu=index` output, or null without it (tests pass it in). */
  readonly smi?: () => string | null;
}

const list = (s: string) =>
  s
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);

function nvidiaSmi(): string | null {
  try {
    return execFileSync("nvidia-smi", ["--query-gpu=index", "--format=csv,noheader"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 10_000,
    });
  } catch {
    return null;
  }
}

export function detectGpus(sources: GpuSources): string[] {
  const { env } = sources;
  const given = env.XLASERVE_GPUS?.trim();
  if (given !== undefined && given !== "") {
    if (/^[0-9]+$/.test(given)) return Array.from({ length: Number(given) }, (_, i) => String(i));
    return list(given);
  }
  if (env.CUDA_VISIBLE_DEVICES !== undefined) return list(env.CUDA_VISIBLE_DEVICES);
  const smi = (sources.smi ?? nvidiaSmi)();
  if (smi) {
    const found = smi
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l.length > 0);
    if (found.length > 0) return found;
  }
  let devices: string[] = [];
  try {
    devices = readdirSync(sources.devDir ?? "/dev")
      .map((f) => /^nvidia([0-9]+)$/.exec(f)?.[1])
      .filter((d): d is string => d !== undefined);
  } catch {
    /* no device directory */
  }
  return devices.sort((a, b) => Number(a) - Number(b));
}

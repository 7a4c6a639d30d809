import { existsSync, readFileSync, writeFileSync } from "node:fs";

/**
 * Figures the GPU tests measure, merged into the JSON file named by XLASERVE_GPU_RESULTS (the
 * GPU run copies it to bench/results/). Without that variable nothing is written.
 */
export function recordResult(section: string, values: unknown): void {
  const path = process.env.XLASERVE_GPU_RESULTS;
  if (!path) return;
  const current = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {};
  current[section] = values;
  writeFileSync(path, `${JSON.stringify(current, null, 2)}\n`);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

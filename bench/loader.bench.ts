/**
 * Bundle loader benchmark: loads every bundle of a repository (default: the examples) many
 * times and prints the median load time per bundle and the median total. The target is well
 * under 50 ms for the three examples together (issue 2).
 *
 *   bun bench/loader.bench.ts [repository] [runs]
 */
import { join } from "node:path";
import { discoverBundles, loadBundle } from "@xlaserve/core";

const repository = process.argv[2] ?? join(import.meta.dir, "..", "examples", "models");
const runs = Number(process.argv[3] ?? 30);
const bundles = discoverBundles(repository);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

// The first load of each bundle also pays for module compilation of the loader itself and the
// page cache; it is reported separately rather than folded into the median.
const firstTotal = performance.now();
const first = new Map<string, number>();
for (const { name, dir } of bundles) {
  const start = performance.now();
  await loadBundle(dir);
  first.set(name, performance.now() - start);
}
const coldTotal = performance.now() - firstTotal;

const perBundle = new Map<string, number[]>(bundles.map((b) => [b.name, []]));
const totals: number[] = [];
for (let run = 0; run < runs; run++) {
  const runStart = performance.now();
  for (const { name, dir } of bundles) {
    const start = performance.now();
    await loadBundle(dir);
    perBundle.get(name)?.push(performance.now() - start);
  }
  totals.push(performance.now() - runStart);
}

console.log(`loader: ${bundles.length} bundles from ${repository}, ${runs} runs (median ms)`);
for (const { name } of bundles) {
  const times = perBundle.get(name) ?? [];
  console.log(
    `  ${name.padEnd(16)} ${median(times).toFixed(2).padStart(8)} ms   (first load ${first.get(name)?.toFixed(2)} ms)`,
  );
}
console.log(
  `  ${"total".padEnd(16)} ${median(totals).toFixed(2).padStart(8)} ms   (first load ${coldTotal.toFixed(2)} ms)`,
);

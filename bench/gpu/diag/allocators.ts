/**
 * Diagnostic: whether the C allocator changes how long a program load takes. A load is mostly the
 * plugin parsing, printing and rebuilding an HLO module (bench/results/pjrt-load-trace-2026-11-30.json):
 * many small allocations, which glibc's malloc serves slower than jemalloc, tcmalloc or mimalloc.
 * Each variant runs load-variants.ts "loads" (9 loads of one serialized program in a fresh process,
 * the first one that process's first load) with the library in LD_PRELOAD. The GPU host's vCPUs
 * differ in speed by up to 2x, so every round pins all variants to one CPU (taskset), in an order
 * that rotates, and moves to another CPU for the next round; ratios are taken within a round.
 *
 *   bun bench/gpu/diag/allocators.ts <plugin.so> <bundle dir> <program.pjrt> <rounds> <label=lib.so|glibc> ...
 */
import { availableParallelism } from "node:os";
import { describeFailure, lastJsonLine, runProcess } from "../../lib/proc.ts";
import { median } from "../../lib/stats.ts";

const [pluginPath, bundleDir, programPath, roundsArg, ...variantArgs] = process.argv.slice(2);
if (!pluginPath || !bundleDir || !programPath || !roundsArg || variantArgs.length === 0) {
  console.error(
    "usage: bun bench/gpu/diag/allocators.ts <plugin.so> <bundle dir> <program.pjrt> <rounds> <label=lib.so|glibc> ...",
  );
  process.exit(2);
}
const variants = variantArgs.map((arg) => {
  const [label, lib] = arg.split("=");
  return { label: label!, preload: lib && lib !== "glibc" ? lib : null };
});
const rounds = Number(roundsArg);
const cpus = availableParallelism();
const script = new URL("./load-variants.ts", import.meta.url).pathname;

interface Sample {
  round: number;
  cpu: number;
  label: string;
  firstMs: number | null;
  medianMs: number | null;
  error?: string;
}
const samples: Sample[] = [];
for (let round = 0; round < rounds; round++) {
  // Spread rounds over the CPUs: 16 CPUs, 6 rounds -> 0, 2, 5, 8, 10, 13.
  const cpu = Math.floor((round * cpus) / rounds);
  for (let k = 0; k < variants.length; k++) {
    const v = variants[(k + round) % variants.length]!;
    const result = await runProcess(
      ["taskset", "-c", String(cpu), process.execPath, script, pluginPath, bundleDir, "1", "loads", programPath],
      { env: { LD_PRELOAD: v.preload ?? undefined }, timeoutMs: 60_000 },
    );
    // load-variants.ts "loads" ends with its figures' line.
    const parsed = lastJsonLine(result.stdout) as { median: number; all: number[] } | null;
    if (result.code !== 0 || !parsed) {
      samples.push({ round, cpu, label: v.label, firstMs: null, medianMs: null, error: describeFailure(result) });
      console.error(`round ${round} cpu ${cpu} ${v.label}: failed (${result.code})`);
      continue;
    }
    samples.push({ round, cpu, label: v.label, firstMs: parsed.all[0] ?? null, medianMs: parsed.median });
    console.error(`round ${round} cpu ${cpu} ${v.label}: first ${parsed.all[0]} ms, median ${parsed.median} ms`);
  }
}

const base = variants[0]!.label;
const summary = variants.map((v) => {
  const mine = samples.filter((s) => s.label === v.label && s.medianMs !== null);
  const within = (pick: (s: Sample) => number | null) =>
    median(
      mine.flatMap((s) => {
        const ref = samples.find((b) => b.round === s.round && b.label === base);
        const a = pick(s);
        const b = ref ? pick(ref) : null;
        return a !== null && b ? [a / b] : [];
      }),
    );
  return {
    label: v.label,
    preload: v.preload,
    firstLoadMedianMs: median(mine.map((s) => s.firstMs!)),
    loadMedianMs: median(mine.map((s) => s.medianMs!)),
    [`firstLoadVs_${base}`]: within((s) => s.firstMs),
    [`loadVs_${base}`]: within((s) => s.medianMs),
    failures: samples.filter((s) => s.label === v.label && s.medianMs === null).length,
  };
});
console.log(JSON.stringify({ benchmark: "pjrt-load-allocators", program: programPath, rounds, summary, samples }));

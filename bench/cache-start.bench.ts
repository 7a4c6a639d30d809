/**
 * Program cache start-up benchmark (issue 5): time from process start to "all models ready",
 * cold (empty cache: every program compiled) against warm (every program loaded), on the CPU
 * engine with the example bundles. Each start is a fresh Bun process, as a restart is.
 *
 *   bun bench/cache-start.bench.ts [repository] [runs]
 *   XLASERVE_BENCH_ENGINE=pjrt bun bench/cache-start.bench.ts <repository with resnet50> [runs]
 *     (GPU host; the plugin is found as tests/gpu finds it, or set XLASERVE_PJRT_PLUGIN)
 *
 * Writes bench/results/cache-start-<cpu|pjrt>.json. Two figures per start: `readyMs` as the child
 * measures it (performance.now() counts from its process start) and `wallMs` from spawn to exit
 * as this parent sees it.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";

const source = process.argv[2] ?? join(import.meta.dir, "..", "examples", "models");
const runs = Number(process.argv[3] ?? 5);
const CHILD = join(import.meta.dir, "cache-start-child.ts");

interface Start {
  readyMs: number;
  wallMs: number;
  programs: { model: string; module: string; outcome: string; ms: number }[];
  identity: Record<string, string>;
  phases: Record<string, number>;
}

async function start(repository: string, stateDir: string): Promise<Start> {
  const t0 = performance.now();
  const p = Bun.spawn([process.execPath, CHILD, repository, stateDir], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  const wallMs = performance.now() - t0;
  if (code !== 0) throw new Error(`worker start exited with ${code}`);
  const parsed = JSON.parse(out.trim().split("\n").at(-1)!) as Omit<Start, "wallMs">;
  return { ...parsed, wallMs };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function medianPhases(starts: Start[]): Record<string, number> {
  return Object.fromEntries(Object.keys(starts[0]!.phases).map((k) => [k, median(starts.map((s) => s.phases[k]!))]));
}

const work = mkdtempSync(join(tmpdir(), "xlaserve-cache-bench-"));
const repository = join(work, "models");
const stateDir = join(work, "state");
const cold: Start[] = [];
const warm: Start[] = [];
try {
  for (let run = 0; run < runs; run++) {
    // Cold: a repository copy without .cache/ and an empty state directory.
    rmSync(repository, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
    cpSync(source, repository, { recursive: true, filter: (src) => !src.endsWith(".cache") });
    const c = await start(repository, stateDir);
    if (c.programs.some((p) => p.outcome === "hit")) throw new Error("cold start found cached programs");
    cold.push(c);
    const w = await start(repository, stateDir);
    if (w.programs.some((p) => p.outcome !== "hit")) throw new Error("warm start compiled a program");
    warm.push(w);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const summary = {
  benchmark: "cache-start",
  engine: process.env.XLASERVE_BENCH_ENGINE === "pjrt" ? "pjrt" : "reactant (CPU)",
  identity: cold[0]!.identity,
  date: new Date().toISOString(),
  host: { cpus: cpus().length, cpu: cpus()[0]?.model ?? "unknown", platform: process.platform, bun: Bun.version },
  runs,
  programs: cold[0]!.programs.length,
  coldReadyMsMedian: median(cold.map((s) => s.readyMs)),
  warmReadyMsMedian: median(warm.map((s) => s.readyMs)),
  coldWallMsMedian: median(cold.map((s) => s.wallMs)),
  warmWallMsMedian: median(warm.map((s) => s.wallMs)),
  coldPhasesMedian: medianPhases(cold),
  warmPhasesMedian: medianPhases(warm),
  speedupReady: median(cold.map((s) => s.readyMs)) / median(warm.map((s) => s.readyMs)),
  perProgram: cold[0]!.programs.map((p, i) => ({
    model: p.model,
    module: p.module,
    compileMsMedian: median(cold.map((s) => s.programs[i]!.ms)),
    loadMsMedian: median(warm.map((s) => s.programs[i]!.ms)),
  })),
};
console.log(`cache start, ${summary.programs} programs, ${runs} runs (median ms, process start -> all models ready)`);
console.log(
  `  cold ${summary.coldReadyMsMedian.toFixed(1)}   warm ${summary.warmReadyMsMedian.toFixed(1)}   x${summary.speedupReady.toFixed(1)}`,
);
const fmt = (p: Record<string, number>) =>
  Object.entries(p)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(", ");
console.log(`  cold phases: ${fmt(summary.coldPhasesMedian)}`);
console.log(`  warm phases: ${fmt(summary.warmPhasesMedian)}`);
for (const p of summary.perProgram) {
  console.log(
    `  ${`${p.model}/${p.module}`.padEnd(32)} compile ${p.compileMsMedian.toFixed(1).padStart(8)}  load ${p.loadMsMedian.toFixed(2).padStart(7)}`,
  );
}
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dir, "results", `cache-start-${process.env.XLASERVE_BENCH_ENGINE === "pjrt" ? "pjrt" : "cpu"}.json`),
  `${JSON.stringify(summary, null, 2)}\n`,
);

/**
 * Worker start (issue 5): process start to all models ready (/v2/health/ready answers 200), cold
 * (a repository copy without .cache/ and an empty state directory: every program compiled) vs
 * warm (the same repository again: every program loaded from the cache), through the real CLI
 * (`bun apps/worker/src/main.ts serve`). On the GPU host: the examples plus ResNet-50 through
 * PJRT; here (--engine reactant) the same code measures the CPU engine.
 * Also the ResNet-50 program load ms from the worker's "model loaded" log lines (warm starts).
 *
 *   bun bench/gpu/worker-start.bench.ts --models DIR [--engine pjrt] [--plugin SO] [--runs 2]
 *       [--warm-per-cold 2] [--load-threads 0,4] [--hedge-loads 0,3] [--keep-repo DIR] [--timeout-s 400] [--results-dir D]
 *
 * With --load-threads, warm starts take turns over those pjrt.loadThreads settings (0: programs
 * load one after another on the engine thread) and each setting's ready time and model-loading
 * phase are compared with the first's, measured in the same run; --hedge-loads likewise over
 * pjrt.hedgeLoads (both given: the k-th warm start takes the k-th of each list).
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import { findCudaPlugin } from "../lib/pjrt.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";
import { programLoads, repositoryIndex, startWorkerProcess } from "../lib/worker.ts";

const USAGE = `
bun bench/gpu/worker-start.bench.ts --models DIR [options]
  --models DIR         source model repository (copied; never written), required
  --engine E           pjrt (default) | reactant | auto
  --plugin SO          PJRT plugin (default: $XLASERVE_PJRT_PLUGIN, else jax-cuda13-pjrt's)
  --runs N             cold starts (default 2); each followed by --warm-per-cold warm starts
  --warm-per-cold N    warm starts after each cold start (default 2)
  --load-threads L     comma list of pjrt.loadThreads values that warm starts take turns over
  --hedge-loads L      comma list of pjrt.hedgeLoads values that warm starts take turns over
  --keep-repo DIR      leave the warm repository (with .cache/) there for later benchmarks
  --timeout-s N        limit per start (default 400)
  --results-dir DIR    where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  engine: { type: "string" },
  plugin: { type: "string" },
  runs: { type: "string" },
  "warm-per-cold": { type: "string" },
  "load-threads": { type: "string" },
  "hedge-loads": { type: "string" },
  "keep-repo": { type: "string" },
  "timeout-s": { type: "string" },
  "results-dir": { type: "string" },
});
if (typeof values.models !== "string") {
  console.error(`--models is required\n${USAGE}`);
  process.exit(2);
}
const engine = ((values.engine as string | undefined) ?? "pjrt") as "pjrt" | "reactant" | "auto";
if (!["pjrt", "reactant", "auto"].includes(engine)) {
  console.error(`--engine must be pjrt, reactant or auto\n${USAGE}`);
  process.exit(2);
}
const source = resolve(values.models);
const runs = Math.max(1, intFlag(values.runs, 2, "runs"));
const warmPerCold = Math.max(1, intFlag(values["warm-per-cold"], 2, "warm-per-cold"));
const timeoutMs = intFlag(values["timeout-s"], 400, "timeout-s") * 1000;
function settingList(flag: "load-threads" | "hedge-loads"): number[] {
  const list = listFlag(values[flag], []).map(Number);
  if (list.some((n) => !Number.isInteger(n) || n < 0)) {
    console.error(`--${flag} takes integers >= 0\n${USAGE}`);
    process.exit(2);
  }
  return list;
}
const loadThreads = settingList("load-threads");
const hedgeLoads = settingList("hedge-loads");
const work = mkdtempSync(join(tmpdir(), "xlaserve-worker-start-"));
const repository = join(work, "models");
const stateDir = join(work, "state");

const result = new BenchResult(`worker-start-${engine}`);
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", {
  source,
  engine,
  runs,
  warmPerCold,
  loadThreads: loadThreads.length ? loadThreads : "default",
  hedgeLoads: hedgeLoads.length ? hedgeLoads : "default",
  measure: "spawn -> /v2/health/ready 200",
});

let plugin: string | undefined;
if (engine !== "reactant") {
  plugin = await result.step("plugin", () => findCudaPlugin(values.plugin as string | undefined));
  if (engine === "pjrt" && !plugin) {
    result.write(resultsDir(values["results-dir"] as string | undefined));
    process.exit(0);
  }
}

interface Start {
  kind: "cold" | "warm";
  loadThreads: number | null;
  hedgeLoads: number | null;
  readyMs: number;
  /** The worker's own "models" phase of its ready line: every bundle read, loaded and admitted. */
  modelsMs: number | null;
  programs: ReturnType<typeof programLoads>;
  models: string[];
}
const starts: Start[] = [];

async function once(
  kind: "cold" | "warm",
  r: number,
  threads: number | null = null,
  hedge: number | null = null,
): Promise<void> {
  await result.step(`${kind} start ${r}`, async () => {
    const env = {
      ...(threads === null ? {} : { XLASERVE_PJRT__LOAD_THREADS: String(threads) }),
      ...(hedge === null ? {} : { XLASERVE_PJRT__HEDGE_LOADS: String(hedge) }),
    };
    const w = await startWorkerProcess({ repository, stateDir, engine, plugin, timeoutMs, env });
    try {
      const programs = programLoads(w.logs);
      const models = [...new Set(programs.map((p) => p.model))];
      const readyLine = w.logs.find((l) => String(l.msg).startsWith("ready in"));
      const modelsMs = (readyLine?.phases as { models?: number } | undefined)?.models ?? null;
      starts.push({ kind, loadThreads: threads, hedgeLoads: hedge, readyMs: w.readyMs, modelsMs, programs, models });
      const outcomes = programs.map((p) => p.cache);
      console.log(
        `  ${kind} start ${r}: ready at ${w.readyMs.toFixed(1)} ms, ${models.length} models, programs ${outcomes.join(",")}`,
      );
      // The worker's own breakdown: its "ready in N ms" phases and each model's load phases.
      const ready = w.logs.find((l) => String(l.msg).startsWith("ready in"));
      const loads = w.logs
        .filter((l) => l.msg === "model loaded")
        .map((l) => ({ model: l.model, ms: l.ms, phases: l.phases, figures: l.figures }));
      result.figure(`${kind} start ${r} breakdown`, {
        loadThreads: threads,
        hedgeLoads: hedge,
        ready: ready?.phases ?? null,
        readyMs: ready?.ms ?? null,
        loads,
      });
      if (kind === "cold" && outcomes.includes("hit")) result.note(`cold start ${r} found cached programs`);
      if (kind === "warm" && outcomes.some((o) => o !== "hit"))
        result.note(`warm start ${r} compiled: ${outcomes.join(",")}`);
      const index = await repositoryIndex(w.url);
      const notReady = index.filter((e) => e.state !== "READY");
      if (notReady.length) {
        result.error(
          `${kind} start ${r}`,
          `models not ready: ${notReady.map((e) => `${e.name} (${e.state}: ${e.reason ?? ""})`).join("; ")}`,
        );
      }
      const unready = w.logs.filter((l) => /refused|failed|unloaded/i.test(String(l.msg)) || l.level === "error");
      if (unready.length) result.figure(`${kind} start ${r} problems`, unready.slice(0, 10));
    } finally {
      await w.stop();
    }
  });
}

try {
  for (let r = 0; r < runs; r++) {
    rmSync(repository, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
    cpSync(source, repository, { recursive: true, filter: (src) => basename(src) !== ".cache" });
    await once("cold", r);
    for (let k = 0; k < warmPerCold; k++) {
      const threads = loadThreads.length ? (loadThreads[k % loadThreads.length] as number) : null;
      const hedge = hedgeLoads.length ? (hedgeLoads[k % hedgeLoads.length] as number) : null;
      await once("warm", r * warmPerCold + k, threads, hedge);
    }
  }
  if (typeof values["keep-repo"] === "string") {
    const keep = resolve(values["keep-repo"]);
    rmSync(keep, { recursive: true, force: true });
    cpSync(repository, keep, { recursive: true });
    result.note(`warm repository kept at ${keep}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const cold = starts.filter((s) => s.kind === "cold");
const warm = starts.filter((s) => s.kind === "warm");
result.figure("coldReadyMs", summarize(cold.map((s) => s.readyMs)));
result.figure("warmReadyMs", summarize(warm.map((s) => s.readyMs)));
result.figure("models", cold[0]?.models ?? warm[0]?.models ?? []);
// Per program: compile ms (cold) and load ms (warm), medians across starts.
const keys = [...new Set(starts.flatMap((s) => s.programs.map((p) => `${p.model}/${p.file}`)))];
const perProgram = keys.map((k) => {
  const pick = (ss: Start[]) =>
    ss.flatMap((s) => s.programs.filter((p) => `${p.model}/${p.file}` === k).map((p) => p.ms));
  return { program: k, coldMs: summarize(pick(cold)), warmMs: summarize(pick(warm)) };
});
result.figure("perProgram", perProgram);
const coldMed = cold.length ? round(median(cold.map((s) => s.readyMs))) : null;
const warmMed = warm.length ? round(median(warm.map((s) => s.readyMs))) : null;
result.ratio(
  "start warm/cold",
  { label: "warm ready ms", value: warmMed },
  { label: "cold ready ms", value: coldMed },
  engine === "pjrt" ? "<= 0.1" : undefined,
);
result.ratio(
  "start cold/warm (speed-up)",
  { label: "cold ready ms", value: coldMed },
  { label: "warm ready ms", value: warmMed },
  engine === "pjrt" ? ">= 10" : undefined,
);
// Each setting against the first one's, over warm starts of the same run.
for (const [setting, list] of [
  ["loadThreads", loadThreads],
  ["hedgeLoads", hedgeLoads],
] as const) {
  const bySetting = (n: number) => warm.filter((s) => s[setting] === n);
  const base = list[0] as number;
  for (const n of list.slice(1)) {
    for (const [what, pick] of [
      ["warm ready ms", (s: Start) => s.readyMs],
      ["models phase ms", (s: Start) => s.modelsMs ?? Number.NaN],
    ] as const) {
      result.ratio(
        `${what} ${setting} ${n}/${base}`,
        { label: `median ${what}, ${setting} ${n}`, value: round(median(bySetting(n).map(pick))) },
        { label: `median ${what}, ${setting} ${base}`, value: round(median(bySetting(base).map(pick))) },
      );
    }
  }
}
const resnet = perProgram.filter((p) => p.program.startsWith("resnet50/"));
for (const p of resnet) {
  result.figure(`resnet50 program load ms ${p.program}`, p.warmMs);
  result.ratio(
    `${p.program} compile/load (worker)`,
    { label: "cold compile ms (median)", value: p.coldMs.median },
    { label: "warm load ms (median)", value: p.warmMs.median },
  );
  if (Number.isFinite(p.warmMs.median)) result.figure(`${p.program} load under 50 ms`, p.warmMs.median < 50);
}
if (engine !== "reactant" && resnet.length === 0) result.note("no resnet50 program in the worker's logs");
result.write(resultsDir(values["results-dir"] as string | undefined));

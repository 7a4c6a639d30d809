/**
 * The CPU engine against XLA CPU (issue 4): latency of the example CNN, transformer and ResNet-50
 * (batch 1) on @xlaserve/backend-reactant against JAX with JAX_PLATFORMS=cpu running the same
 * module (bench/anchors/jax_anchor.py latency --platform cpu), both pinned to the same cores
 * (taskset -c 0,1 by default) in the same run, median of --runs; plus a per-op time profile of the
 * engine (exclusive ms per StableHLO op name) and each model's largest difference from XLA's
 * reference outputs.
 *
 * Where python3 cannot import jax or a bundle has no jax_exported.cpu.b1.bin the anchor is skipped
 * and the result says so: the engine's figures alone are then no comparison.
 *
 *   bun bench/cpu/engine-vs-xla.bench.ts [--models DIR] [--only cnn,transformer,resnet50]
 *       [--batch 1] [--runs 20] [--cores 0,1] [--blas-threads 2] [--profile-runs 3] [--results-dir D]
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type AbstractBackend, type Bundle, type Executable, loadBundle } from "@xlaserve/core";
import { anchorUnavailable, runAnchor } from "../lib/anchor.ts";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import {
  disposeAll,
  downloadAll,
  inputsFor,
  maxAbsDiffOrReason,
  moduleFor,
  referenceOutputs,
  timeExecutions,
  uploadAll,
  uploadWeights,
} from "../lib/bundle-io.ts";
import { expandCpuList } from "../lib/current-cpu.ts";
import { currentAffinity, reexecPinned } from "../lib/pin.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/engine-vs-xla.bench.ts [options]
  --models DIR         model repository (default examples/models; on the GPU host the exported
                       repository with jax_exported.cpu.b1.bin files and resnet50)
  --only a,b           bundles (default cnn,transformer,resnet50; missing ones are reported)
  --batch N            batch size (default 1)
  --runs N             timed runs per side (default 20)
  --warmup N           untimed runs first (default 3)
  --cores LIST         pin both sides with taskset -c LIST (default 0,1; "none" to not pin)
  --blas-threads N     OPENBLAS_NUM_THREADS for the engine (default: the number of pinned cores)
  --profile-runs N     runs of the per-op profile (default 3; 0 to skip)
  --max-seconds-per-model N  fewer timed engine runs (at least 5) when they would take longer (60)
  --results-dir DIR    where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  only: { type: "string" },
  batch: { type: "string" },
  runs: { type: "string" },
  warmup: { type: "string" },
  cores: { type: "string" },
  "blas-threads": { type: "string" },
  "profile-runs": { type: "string" },
  "max-seconds-per-model": { type: "string" },
  "results-dir": { type: "string" },
});
const EXAMPLES = resolve(import.meta.dir, "..", "..", "examples", "models");
const modelsDir = resolve((values.models as string | undefined) ?? EXAMPLES);
const only = listFlag(values.only, ["cnn", "transformer", "resnet50"]);
const batch = Math.max(1, intFlag(values.batch, 1, "batch"));
const runs = Math.max(1, intFlag(values.runs, 20, "runs"));
const warmup = intFlag(values.warmup, 3, "warmup");
const cores = (values.cores as string | undefined) ?? "0,1";
const pinned = cores !== "none";
const coreCount = pinned ? expandCpuList(cores).length : navigator.hardwareConcurrency;
const blasThreads = intFlag(values["blas-threads"], coreCount, "blas-threads");
const profileRuns = intFlag(values["profile-runs"], 3, "profile-runs");
const maxSecondsPerModel = intFlag(values["max-seconds-per-model"], 60, "max-seconds-per-model");

await reexecPinned(cores, blasThreads);

const result = new BenchResult("engine-vs-xla-cpu");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", {
  modelsDir,
  models: only,
  batch,
  runs,
  warmup,
  cores: pinned ? cores : "unpinned",
  affinity: currentAffinity(),
  blasThreads,
  anchorPinnedWith: pinned ? `taskset -c ${cores}` : "none",
});

const backend = await result.step("createReactantBackend", async () => {
  // A variable specifier: the engine package is being written alongside this benchmark.
  const spec = "@xlaserve/backend-reactant";
  const mod = (await import(spec)) as {
    createReactantBackend?: (o?: unknown) => AbstractBackend | Promise<AbstractBackend>;
  };
  if (typeof mod.createReactantBackend !== "function")
    throw new Error("@xlaserve/backend-reactant exports no createReactantBackend");
  return await mod.createReactantBackend();
});

const perModel: Record<string, unknown>[] = [];
for (const name of only) {
  let dir = join(modelsDir, name);
  if (!existsSync(join(dir, "manifest.yaml"))) {
    const example = join(EXAMPLES, name);
    if (!existsSync(join(example, "manifest.yaml"))) {
      result.error(name, `no bundle at ${dir}`);
      continue;
    }
    result.note(`${name}: no bundle at ${dir}; using the committed example ${example}`);
    dir = example;
  }
  const bundle = await result.step(`${name}: load bundle`, () => loadBundle(dir));
  if (!bundle) continue;
  const entry: Record<string, unknown> = { model: name, batch };
  perModel.push(entry);
  let engineMedian: number | null = null;
  if (backend) {
    const be = backend;
    await result.step(`${name}: engine`, async () => {
      engineMedian = await engineSide(be, bundle, entry);
    });
  }
  const why = anchorUnavailable(dir, "cpu", batch);
  if (why) {
    entry.xlaCpu = { skipped: why };
    result.note(`${name}: XLA CPU anchor skipped: ${why}`);
    continue;
  }
  await result.step(`${name}: XLA CPU anchor`, async () => {
    const a = await runAnchor({
      mode: "latency",
      bundleDir: dir,
      batch,
      platform: "cpu",
      runs,
      prefix: pinned ? ["taskset", "-c", cores] : [],
      timeoutMs: 600_000,
    });
    if (!a.ok) throw new Error(a.error ?? "anchor failed");
    entry.xlaCpu = a.result;
    result.ratio(
      `${name} b${batch} engine/xla-cpu`,
      { label: "engine median ms", value: engineMedian },
      { label: "XLA CPU median ms", value: (a.result?.median_ms as number | undefined) ?? null },
      name === "resnet50" ? "<= 3" : undefined,
      `both pinned to ${pinned ? cores : "no cores"}`,
    );
  });
}
result.figure("perModel", perModel);
await backend?.dispose();
result.write(resultsDir(values["results-dir"] as string | undefined));

async function engineSide(be: AbstractBackend, bundle: Bundle, entry: Record<string, unknown>): Promise<number> {
  const module = moduleFor(bundle, batch);
  const c0 = performance.now();
  const exe = await be.compile({ bytes: await module.read(), format: module.format, origin: module.path }, {});
  entry.compileMs = round(performance.now() - c0);
  const weights = await uploadWeights(be, bundle);
  const { tensors, source } = inputsFor(bundle, module, batch);
  const inputs = await uploadAll(be, tensors);
  const args = [...inputs, ...weights];
  entry.inputs = source;
  const first = await be.execute(exe, args);
  const host = await downloadAll(be, first);
  disposeAll(first);
  const ref = source === "reference" ? referenceOutputs(bundle, batch, "outputs") : null;
  if (ref) entry.maxAbsDiffVsXlaCpuReference = maxAbsDiffOrReason(host, ref);
  // Time box: a slow model gets fewer timed runs (never under 5) so the whole step fits its limit.
  const p0 = performance.now();
  disposeAll(await be.execute(exe, args));
  const oneRunMs = performance.now() - p0;
  const budgetRuns = Math.floor((maxSecondsPerModel * 1000) / Math.max(oneRunMs, 1e-3)) - warmup - profileRuns;
  const runsUsed = Math.max(Math.min(runs, 5), Math.min(runs, budgetRuns));
  if (runsUsed < runs) {
    result.note(
      `${bundle.name}: one run takes ${oneRunMs.toFixed(0)} ms; ${runsUsed} timed runs instead of ${runs} (--max-seconds-per-model ${maxSecondsPerModel})`,
    );
  }
  entry.runs = runsUsed;
  const times = await timeExecutions(be, exe, args, warmup, runsUsed);
  entry.engineMs = summarize(times);
  console.log(
    `${bundle.name} b${batch}: engine median ${median(times).toFixed(2)} ms over ${runsUsed} runs (compile ${entry.compileMs} ms)`,
  );
  if (profileRuns > 0) entry.profile = await profile(be, exe, args);
  disposeAll(args);
  exe.dispose();
  return round(median(times));
}

// ---- per-op profile ---------------------------------------------------------------------------

interface StepLike {
  op: { name: string };
  kernel: (...a: unknown[]) => unknown;
}

/**
 * Exclusive time per op name over `profileRuns` runs. The engine has no profiling option yet, so
 * this wraps the kernels of its compiled plan: every step of every compiled function found in the
 * executable (a Program-like object: a `compiled` map of functions with `body.steps`). Time spent
 * in nested functions (call ops) is subtracted from the caller's op. Region blocks (reducer
 * bodies, while loops) count under the op that owns them.
 */
async function profile(be: AbstractBackend, exe: Executable, args: Parameters<AbstractBackend["execute"]>[1]) {
  const steps = findSteps(exe);
  if (steps.length === 0) {
    return {
      available: false,
      reason: "no execution plan steps reachable from the executable; the engine needs a profiling hook",
    };
  }
  const totals = new Map<string, { ms: number; calls: number }>();
  const stack: number[] = [];
  const originals = steps.map((s) => s.kernel);
  for (const s of steps) {
    const inner = s.kernel;
    const name = s.op.name;
    s.kernel = (...a: unknown[]) => {
      stack.push(0);
      const t0 = performance.now();
      try {
        return inner(...a);
      } finally {
        const total = performance.now() - t0;
        const nested = stack.pop() as number;
        if (stack.length) stack[stack.length - 1] = (stack[stack.length - 1] as number) + total;
        const e = totals.get(name) ?? { ms: 0, calls: 0 };
        e.ms += total - nested;
        e.calls += 1;
        totals.set(name, e);
      }
    };
  }
  const wall: number[] = [];
  try {
    for (let i = 0; i < profileRuns; i++) {
      const t0 = performance.now();
      disposeAll(await be.execute(exe, args));
      wall.push(performance.now() - t0);
    }
  } finally {
    steps.forEach((s, i) => {
      s.kernel = originals[i] as StepLike["kernel"];
    });
  }
  const wallTotal = wall.reduce((a, b) => a + b, 0);
  const ops = [...totals.entries()]
    .map(([op, e]) => ({
      op,
      msPerRun: round(e.ms / profileRuns),
      callsPerRun: round(e.calls / profileRuns),
      share: round(e.ms / wallTotal),
    }))
    .sort((a, b) => b.msPerRun - a.msPerRun);
  const covered = ops.reduce((a, o) => a + o.msPerRun, 0);
  console.log(
    `  per-op profile (exclusive ms per run, ${profileRuns} runs, wall ${round(wallTotal / profileRuns)} ms):`,
  );
  for (const o of ops.slice(0, 12)) {
    console.log(
      `    ${o.op.padEnd(36)} ${o.msPerRun.toFixed(3).padStart(10)} ms  ${(o.share * 100).toFixed(1).padStart(5)}%  x${o.callsPerRun}`,
    );
  }
  return {
    available: true,
    method: "kernel wrappers on the plan's steps (bench-side)",
    runs: profileRuns,
    wallMsPerRun: round(wallTotal / profileRuns),
    outsideKernelsMsPerRun: round(wallTotal / profileRuns - covered),
    ops,
  };
}

/** Steps of every compiled function reachable from the executable (depth-limited object walk). */
function findSteps(root: unknown): StepLike[] {
  const seen = new Set<unknown>();
  const steps: StepLike[] = [];
  const stepSet = new Set<unknown>();
  const visitBlock = (block: unknown) => {
    const list = (block as { steps?: unknown }).steps;
    if (!Array.isArray(list)) return;
    for (const s of list) {
      if (
        s &&
        typeof s === "object" &&
        typeof (s as StepLike).kernel === "function" &&
        (s as StepLike).op &&
        !stepSet.has(s)
      ) {
        stepSet.add(s);
        steps.push(s as StepLike);
      }
    }
  };
  const walk = (v: unknown, depth: number) => {
    if (!v || typeof v !== "object" || seen.has(v) || depth > 5) return;
    if (ArrayBuffer.isView(v)) return;
    seen.add(v);
    if (v instanceof Map) {
      for (const x of v.values()) walk(x, depth + 1);
      return;
    }
    const body = (v as { body?: unknown }).body;
    if (body && typeof body === "object" && Array.isArray((body as { steps?: unknown }).steps)) visitBlock(body);
    if (Array.isArray(v)) {
      if (v.length > 64) return;
      for (const x of v) walk(x, depth + 1);
      return;
    }
    for (const key of Object.getOwnPropertyNames(v)) {
      let x: unknown;
      try {
        x = (v as Record<string, unknown>)[key];
      } catch {
        continue;
      }
      walk(x, depth + 1);
    }
  };
  walk(root, 0);
  return steps;
}

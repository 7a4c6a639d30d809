/**
 * Per-execution cost of small programs on the CPU engine (@xlaserve/backend-reactant), where
 * bookkeeping rather than arithmetic dominates: the MLP at batch 1 and 8, the CNN and the
 * transformer at batch 1. One execution is what the worker does per request: upload the inputs
 * (the bundle's reference inputs where stored, else zeros), execute with the resident weights,
 * download every output and dispose of the temporaries. Reported per execution: wall and
 * process CPU microseconds (process.cpuUsage: user + system, so OpenBLAS threads and the JIT's
 * compiler threads count too), the median over --reps repetitions of --iters executions each,
 * after --warmup-ms of untimed executions. The warm-up is long on purpose: JavaScriptCore keeps
 * compiling the hot paths on background threads for a second or more, which would otherwise
 * show up as CPU time of the first repetitions.
 *
 * The anchor: where a bundle carries jax_exported.cpu.b<N>.bin (tools/export_jax_bundle.py
 * --jax-exported) and python3 imports jax, XLA CPU's latency for the same module on the same
 * machine, in the same run, and the ratio; otherwise the result says why there is none.
 *
 *   bun bench/cpu/small-programs.bench.ts [--only mlp:1,mlp:8,cnn:1,transformer:1] [--models DIR]
 *       [--iters 5000] [--reps 7] [--warmup-ms 3000] [--profile] [--results-dir D]
 */
import { join, resolve } from "node:path";
import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import { loadBundle } from "@xlaserve/core/bundle/load.ts";
import { anchorUnavailable, runAnchor } from "../lib/anchor.ts";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import { disposeAll, inputsFor, moduleFor, uploadWeights } from "../lib/bundle-io.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/small-programs.bench.ts [options]
  --only a:B,b:B       model:batch pairs (default mlp:1,mlp:8,cnn:1,transformer:1)
  --models DIR         model repository (default examples/models)
  --iters N            executions per repetition (default 5000; fewer where a repetition would pass ~1 s)
  --reps N             repetitions; the median is reported (default 7)
  --warmup-ms N        untimed executions for this long first (default 3000)
  --profile            also print the engine's per-op profile (a separate backend; costs clock reads)
  --results-dir DIR    where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  only: { type: "string" },
  models: { type: "string" },
  iters: { type: "string" },
  reps: { type: "string" },
  "warmup-ms": { type: "string" },
  profile: { type: "boolean" },
  "results-dir": { type: "string" },
});
const modelsDir = resolve(
  (values.models as string | undefined) ?? join(import.meta.dir, "..", "..", "examples", "models"),
);
const cases = listFlag(values.only, ["mlp:1", "mlp:8", "cnn:1", "transformer:1"]).map((c) => {
  const [model = "", batch = "1"] = c.split(":");
  return { model, batch: intFlag(batch, 1, "only") };
});
const iters = Math.max(1, intFlag(values.iters, 5000, "iters"));
const reps = Math.max(1, intFlag(values.reps, 7, "reps"));
const warmupMs = intFlag(values["warmup-ms"], 3000, "warmup-ms");
/** A repetition of a slow model is cut to about this long. */
const REP_BUDGET_MS = 1000;

type CreateBackend = (o?: unknown) => AbstractBackend;
// A variable specifier: the engine package is optional in a checkout that only serves PJRT.
const spec = "@xlaserve/backend-reactant";
const { createReactantBackend } = (await import(spec)) as { createReactantBackend: CreateBackend };

const result = new BenchResult("cpu-small-programs");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", { modelsDir, cases, iters, reps, warmupMs, blasThreads: process.env.OPENBLAS_NUM_THREADS });

interface Loaded {
  backend: AbstractBackend;
  exe: Executable;
  weights: DeviceBuffer[];
  inputs: HostTensor[];
}

async function load(model: string, batch: number, options: unknown): Promise<Loaded> {
  const bundle = await loadBundle(join(modelsDir, model));
  const backend = createReactantBackend(options);
  const module = moduleFor(bundle, batch);
  const exe = await backend.compile({ bytes: await module.read(), format: module.format, origin: module.file }, {});
  const weights = await uploadWeights(backend, bundle);
  return { backend, exe, weights, inputs: inputsFor(bundle, module, batch).tensors };
}

/** One request's worth of engine work: upload, execute, download, dispose. */
async function once(l: Loaded): Promise<void> {
  const ins: DeviceBuffer[] = [];
  for (const t of l.inputs) ins.push(await l.backend.upload(t));
  const outs = await l.backend.execute(l.exe, [...ins, ...l.weights]);
  for (const o of outs) {
    await l.backend.download(o);
    o.dispose();
  }
  disposeAll(ins);
}

/** Runs `once` for --warmup-ms; returns the last executions' mean milliseconds. */
async function warmUp(l: Loaded): Promise<number> {
  const end = performance.now() + warmupMs;
  let count = 0;
  let start = performance.now();
  for (;;) {
    if (count === 100) {
      count = 0;
      start = performance.now();
    }
    await once(l);
    count++;
    if (performance.now() >= end && count >= 5) return (performance.now() - start) / count;
  }
}

const perCase: Record<string, unknown>[] = [];
for (const { model, batch } of cases) {
  const label = `${model} b${batch}`;
  await result.step(label, async () => {
    const l = await load(model, batch, {});
    const oneMs = await warmUp(l);
    const n = Math.max(5, Math.min(iters, Math.floor(REP_BUDGET_MS / Math.max(oneMs, 1e-3))));
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < reps; r++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await once(l);
      const dt = performance.now() - t0;
      const c = process.cpuUsage(c0);
      wall.push((dt * 1000) / n);
      cpu.push((c.user + c.system) / n);
    }
    const entry: Record<string, unknown> = {
      model,
      batch,
      itersPerRep: n,
      wallUs: summarize(wall),
      cpuUs: summarize(cpu),
    };
    perCase.push(entry);
    console.log(
      `${label.padEnd(16)} wall ${median(wall).toFixed(1).padStart(8)} us  cpu ${median(cpu).toFixed(1).padStart(8)} us  (${reps} x ${n})`,
    );
    disposeAll(l.weights);
    l.exe.dispose();
    await l.backend.dispose();
    if (values.profile) entry.profileUsPerExecution = await profile(model, batch, n);
    await anchor(model, batch, median(wall), entry);
  });
}
result.figure("perCase", perCase);
result.write(resultsDir(values["results-dir"] as string | undefined));

/** XLA CPU on the same module, same machine, same run (bench/anchors/jax_anchor.py latency). */
async function anchor(model: string, batch: number, engineWallUs: number, entry: Record<string, unknown>) {
  const dir = join(modelsDir, model);
  const why = anchorUnavailable(dir, "cpu", batch);
  if (why) {
    entry.xlaCpu = { skipped: why };
    result.note(`${model} b${batch}: XLA CPU anchor skipped: ${why}`);
    return;
  }
  const a = await runAnchor({ mode: "latency", bundleDir: dir, batch, platform: "cpu", runs: 200, timeoutMs: 300_000 });
  if (!a.ok) throw new Error(a.error ?? "anchor failed");
  entry.xlaCpu = a.result;
  result.ratio(
    `${model} b${batch} engine/xla-cpu`,
    { label: "engine median us per execution", value: engineWallUs },
    { label: "XLA CPU median us", value: ((a.result?.median_ms as number | undefined) ?? Number.NaN) * 1000 },
  );
}

interface OpTime {
  ms: number;
  count: number;
}

/** The engine's own per-op profile (createReactantBackend's `profile` option), per execution. */
async function profile(model: string, batch: number, n: number): Promise<Record<string, number>> {
  const times = new Map<string, OpTime>();
  const l = await load(model, batch, { profile: times });
  await warmUp(l);
  times.clear();
  for (let i = 0; i < n; i++) await once(l);
  const rows = [...times.entries()].sort((a, b) => b[1].ms - a[1].ms);
  for (const [op, t] of rows.slice(0, 12)) {
    console.log(`    ${op.padEnd(36)} ${((t.ms * 1000) / n).toFixed(2).padStart(9)} us  x${round(t.count / n, 2)}`);
  }
  disposeAll(l.weights);
  l.exe.dispose();
  await l.backend.dispose();
  return Object.fromEntries(rows.map(([op, t]) => [op, round((t.ms * 1000) / n, 3)]));
}

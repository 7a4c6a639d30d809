/**
 * PJRT backend on the GPU (issue 3): per (model, batch size)
 *   - compile ms (in-process PJRT_Client_Compile, autotuning as configured) vs serialized size vs
 *     deserialize-and-load ms (median of --loads fresh loads): the compile/load ratio;
 *   - outputs of the compiled and of the deserialized executable compared byte for byte (every
 *     model), plus the largest difference against XLA's GPU reference from the exporter;
 *   - for --latency-models (default resnet50): execute latency, median of --runs runs on the
 *     deserialized executable, against JAX running the same module (bench/anchors/jax_anchor.py
 *     latency) on the same GPU in the same run;
 *   - a determinism check on the first latency model's batch 1: two compiles with and without
 *     {deterministic: true}, outputs compared.
 *
 *   bun bench/gpu/pjrt-compile-load.bench.ts --models DIR [--plugin SO] [--loads 7] [--runs 100]
 *       [--latency-models resnet50] [--save-serialized DIR] [--skip-determinism] [--results-dir D]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AbstractBackend, type Bundle, type Executable, discoverBundles, loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { anchorUnavailable, python, runAnchor } from "../lib/anchor.ts";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import {
  compareOutputs,
  disposeAll,
  downloadAll,
  inputsFor,
  maxAbsDiffOrReason,
  moduleFor,
  referenceOutputs,
  sha256Each,
  timeExecutions,
  uploadAll,
  uploadWeights,
} from "../lib/bundle-io.ts";
import { findCudaPlugin } from "../lib/pjrt.ts";
import { describeFailure, lastJsonLine, runProcess } from "../lib/proc.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/gpu/pjrt-compile-load.bench.ts --models DIR [options]
  --models DIR            model repository (bundles exported with --jax-exported), required
  --only a,b              only these bundles
  --plugin SO             PJRT plugin (default: $XLASERVE_PJRT_PLUGIN, else jax-cuda13-pjrt's)
  --loads N               deserialize-and-load repetitions per program (default 7)
  --runs N                timed executions for latency (default 100, at least 50 for the issue)
  --latency-models a,b    bundles timed against JAX (default resnet50; "all" for every one)
  --save-serialized DIR   write <model>.b<N>.pjrt there (first-result.bench.ts reads them;
                          default a temp dir). bench/gpu/jax_same_executable.py runs them in JAX
  --skip-determinism      skip the two-compiles determinism check
  --results-dir DIR       where the JSON goes (default $XLASERVE_BENCH_RESULTS or bench/results)
`;

const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  only: { type: "string" },
  plugin: { type: "string" },
  loads: { type: "string" },
  runs: { type: "string" },
  "latency-models": { type: "string" },
  "save-serialized": { type: "string" },
  "skip-determinism": { type: "boolean" },
  "results-dir": { type: "string" },
});
if (typeof values.models !== "string") {
  console.error(`--models is required\n${USAGE}`);
  process.exit(2);
}
const modelsDir = values.models;
const loads = Math.max(1, intFlag(values.loads, 7, "loads"));
const runs = Math.max(1, intFlag(values.runs, 100, "runs"));
const latencyModels = listFlag(values["latency-models"], ["resnet50"]);
const only = listFlag(values.only, []);
const saveDir =
  typeof values["save-serialized"] === "string"
    ? values["save-serialized"]
    : mkdtempSync(join(tmpdir(), "xlaserve-pjrt-"));
const SAME_EXECUTABLE = join(import.meta.dir, "jax_same_executable.py");

const result = new BenchResult("pjrt-compile-load");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", { modelsDir, loads, runs, latencyModels, compile: "in-process (isolateCompile: false)" });

const pluginPath = await result.step("plugin", () => findCudaPlugin(values.plugin as string | undefined));
let backend: AbstractBackend | undefined;
if (pluginPath) {
  result.figure("plugin", pluginPath);
  backend = await result.step("createPjrtBackend", () => createPjrtBackend({ pluginPath, isolateCompile: false }));
}

const programs: Record<string, unknown>[] = [];
let determinismDone = !!values["skip-determinism"];
const failed: string[] = [];

if (backend) {
  const be = backend;
  result.figure("identity", be.identity());
  const bundles = discoverBundles(modelsDir).filter((b) => only.length === 0 || only.includes(b.name));
  for (const loc of bundles) {
    const bundle = await result.step(`load bundle ${loc.name}`, () => loadBundle(loc.dir));
    if (!bundle) continue;
    const weights = await result.step(`${bundle.name}: upload weights`, () => uploadWeights(be, bundle));
    if (!weights) continue;
    for (const batch of bundle.manifest.compiledBatchSizes) {
      const entry = await result.step(`${bundle.name} b${batch}`, () => benchProgram(be, bundle, batch, weights));
      if (entry) programs.push(entry);
      else failed.push(`${bundle.name}.b${batch}`);
      if (!determinismDone && batch === 1 && wantsLatency(bundle.name)) {
        determinismDone = true;
        await result.step(`${bundle.name} b1 determinism`, () => determinism(be, bundle, weights));
      }
    }
    disposeAll(weights);
  }
  result.figure("programs", programs);
  const all = programs.filter((p) => typeof p.byteIdentical === "boolean");
  result.figure("programsFailed", failed);
  result.figure(
    "byteIdenticalAll",
    failed.length === 0 && all.length > 0 && all.every((p) => p.byteIdentical === true),
  );
  await be.dispose();
}
result.write(resultsDir(values["results-dir"] as string | undefined));

function wantsLatency(name: string): boolean {
  return latencyModels.includes("all") || latencyModels.includes(name);
}

async function benchProgram(
  be: AbstractBackend,
  bundle: Bundle,
  batch: number,
  weights: Awaited<ReturnType<typeof uploadWeights>>,
): Promise<Record<string, unknown>> {
  const key = `${bundle.name}.b${batch}`;
  console.log(`${key}:`);
  const module = moduleFor(bundle, batch);
  const source = { bytes: await module.read(), format: module.format, origin: `${bundle.name}/${module.file}` };

  const t0 = performance.now();
  const compiled = await be.compile(source, {});
  const compileMs = performance.now() - t0;
  const s0 = performance.now();
  const serialized = await be.serialize(compiled);
  const serializeMs = performance.now() - s0;
  mkdirSync(saveDir, { recursive: true });
  const programFile = join(saveDir, `${key}.pjrt`);
  writeFileSync(programFile, serialized);
  const loadTimes: number[] = [];
  let loaded: Executable | null = null;
  for (let i = 0; i < loads; i++) {
    const l0 = performance.now();
    const exe = await be.deserialize(serialized, {});
    loadTimes.push(performance.now() - l0);
    loaded?.dispose();
    loaded = exe;
  }
  const loadMs = median(loadTimes);
  console.log(
    `  compile ${compileMs.toFixed(1)} ms, serialized ${serialized.byteLength} B, load median ${loadMs.toFixed(2)} ms`,
  );
  const entry: Record<string, unknown> = {
    model: bundle.name,
    batch,
    module: module.file,
    moduleBytes: module.byteLength,
    compileMs: round(compileMs),
    serializeMs: round(serializeMs),
    serializedBytes: serialized.byteLength,
    loadMs: summarize(loadTimes),
  };
  // No goal here: these loads follow a compile in the same process, whose thread pools are still
  // busy; issue 3's load goal is judged on a restart (fresh process) in pjrt-restart.bench.ts.
  result.ratio(
    `${key} compile/load`,
    { label: "compile ms", value: round(compileMs) },
    { label: "load ms (median, this process, after the compile)", value: round(loadMs) },
  );

  // Byte identity: the compiled program and the program loaded from its serialization.
  const { tensors, source: inputSource } = inputsFor(bundle, module, batch);
  const inputs = await uploadAll(be, tensors);
  const outA = await be.execute(compiled, [...inputs, ...weights]);
  const outB = await be.execute(loaded as Executable, [...inputs, ...weights]);
  const hostA = await downloadAll(be, outA);
  const hostB = await downloadAll(be, outB);
  disposeAll(outA);
  disposeAll(outB);
  const cmp = compareOutputs(hostA, hostB);
  entry.inputs = inputSource;
  entry.byteIdentical = cmp.identical;
  entry.firstDiffByte = cmp.firstDiffByte;
  entry.outputsSha256 = sha256Each(hostB);
  console.log(`  compiled vs deserialized outputs: ${cmp.identical ? "byte-identical" : "DIFFER"}`);
  const ref = inputSource === "reference" ? referenceOutputs(bundle, batch, "outputs_gpu") : null;
  if (ref) entry.maxAbsDiffVsJaxGpuReference = maxAbsDiffOrReason(hostB, ref);
  const refCpu = inputSource === "reference" ? referenceOutputs(bundle, batch, "outputs") : null;
  if (refCpu) entry.maxAbsDiffVsJaxCpuReference = maxAbsDiffOrReason(hostB, refCpu);

  if (wantsLatency(bundle.name)) {
    const times = await timeExecutions(be, loaded as Executable, [...inputs, ...weights], 5, runs);
    entry.latencyMs = summarize(times);
    console.log(`  xlaserve latency median ${median(times).toFixed(3)} ms over ${runs} runs`);
    const why = anchorUnavailable(bundle.dir, "cuda", batch);
    if (why) {
      result.error(`${key} JAX anchor`, why);
    } else {
      const jax = await runAnchor({ mode: "latency", bundleDir: bundle.dir, batch, platform: "cuda", runs });
      if (!jax.ok) {
        result.error(`${key} JAX anchor`, jax.error);
      } else {
        entry.jax = jax.result;
        result.ratio(
          `${key} latency xlaserve/jax`,
          { label: "xlaserve median ms", value: round(median(times)) },
          { label: "jax median ms", value: (jax.result?.median_ms as number | undefined) ?? null },
          undefined,
          "in the compiling process; JAX compiles the module itself. The goal is judged in pjrt-restart.bench.ts (fresh processes, one serialized program on both sides, alternating rounds)",
        );
      }
      // The same serialized executable run by JAX's own client: no autotuner variance.
      const same = await runProcess(
        [python(), SAME_EXECUTABLE, programFile, bundle.dir, "--batch", String(batch), "--runs", String(runs)],
        { env: { PYTHONUNBUFFERED: "1" }, timeoutMs: 300_000 },
      );
      const sameJson = lastJsonLine(same.stdout);
      if (same.code !== 0 || !sameJson || sameJson.ok !== true) {
        result.error(`${key} JAX same-executable anchor`, sameJson ? JSON.stringify(sameJson) : describeFailure(same));
      } else {
        entry.jaxSameExecutable = sameJson;
        const hashes = sameJson.outputs_sha256 as string[] | undefined;
        entry.jaxSameExecutableOutputsIdentical =
          inputSource === "reference" && hashes ? hashes.join() === (entry.outputsSha256 as string[]).join() : null;
        result.ratio(
          `${key} latency xlaserve/jax(same executable)`,
          { label: "xlaserve median ms", value: round(median(times)) },
          {
            label: "jax client, same serialized executable, median ms",
            value: (sameJson.median_ms as number | undefined) ?? null,
          },
          undefined,
          "in the compiling process, one round; see pjrt-restart.bench.ts for the alternating fresh-process comparison",
        );
      }
    }
  }
  disposeAll(inputs);
  compiled.dispose();
  loaded?.dispose();
  return entry;
}

/** Two compiles of one module, with and without {deterministic: true}: do the outputs agree? */
async function determinism(
  be: AbstractBackend,
  bundle: Bundle,
  weights: Awaited<ReturnType<typeof uploadWeights>>,
): Promise<void> {
  const module = moduleFor(bundle, 1);
  const source = { bytes: await module.read(), format: module.format, origin: `${bundle.name}/${module.file}` };
  const { tensors } = inputsFor(bundle, module, 1);
  const inputs = await uploadAll(be, tensors);
  const out: Record<string, unknown> = {};
  for (const deterministic of [false, true]) {
    const hosts = [];
    const ms: number[] = [];
    for (let k = 0; k < 2; k++) {
      const t0 = performance.now();
      const exe = await be.compile(source, { deterministic });
      ms.push(performance.now() - t0);
      const o = await be.execute(exe, [...inputs, ...weights]);
      hosts.push(await downloadAll(be, o));
      disposeAll(o);
      exe.dispose();
    }
    const cmp = compareOutputs(hosts[0]!, hosts[1]!);
    out[deterministic ? "deterministic" : "default"] = {
      compileMs: ms.map((x) => round(x)),
      twoCompilesByteIdentical: cmp.identical,
      maxAbsDiff: cmp.maxAbsDiff,
    };
    console.log(
      `  two compiles (${deterministic ? "deterministic" : "default"}): ${cmp.identical ? "byte-identical" : "differ"}, compile ms ${ms.map((x) => x.toFixed(0)).join(", ")}`,
    );
  }
  disposeAll(inputs);
  result.figure(`determinism ${bundle.name}.b1`, out);
}

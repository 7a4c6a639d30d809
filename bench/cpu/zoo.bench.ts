/**
 * The CPU engine against XLA CPU on every zoo model (tests/zoo/models) at both batch sizes: both
 * sides in the same run on the same cores (this process re-executes under taskset; the XLA side
 * is a JAX child, bench/anchors/jax_zoo_anchor.py, with JAX_PLATFORMS=cpu, inheriting the
 * affinity), taking turns in blocks of runs so both see the same machine speed. Per model and
 * batch the ratio is the median over turn pairs of engine block median / XLA block median; then
 * their geometric mean and the per-op profiles of the worst three.
 *
 *   bun bench/cpu/zoo.bench.ts [--models DIR] [--only a,b] [--cores 0,1|none] [--blas-threads N]
 *       [--rounds 7] [--block-ms 100] [--profile-worst 3] [--results-dir D]
 */
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type AbstractBackend, type DeviceBuffer, type Executable, loadBundle, uploadAll } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { isReferenceBundle, referenceCase } from "@xlaserve/backend-reactant/conformance/bundle-case.ts";
import { profileExecution } from "@xlaserve/backend-reactant/profile.ts";
import { jaxImportable, python } from "../lib/anchor.ts";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import { disposeAll, moduleFor, uploadWeights } from "../lib/bundle-io.ts";
import { expandCpuList } from "../lib/current-cpu.ts";
import { LineChild } from "../lib/line-child.ts";
import { currentAffinity, reexecPinned } from "../lib/pin.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/zoo.bench.ts [options]
  --models DIR         zoo folder (default tests/zoo/models)
  --only a,b           models (default: every bundle in the folder)
  --cores LIST         pin both sides with taskset -c LIST (default 0,1; "none": all cores, unpinned)
  --blas-threads N     OPENBLAS_NUM_THREADS for the engine (default: the number of cores used)
  --rounds N           turns per side per model and batch (default 7); the ratio is the median
                       over turn pairs of engine block median / adjacent XLA block median
  --block-ms N         about this long per turn (default 100; at least one run)
  --profile-worst N    per-op profiles of the N slowest models against XLA (default 3; 0: none)
  --results-dir DIR    where the JSON goes (default bench/results)
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  only: { type: "string" },
  cores: { type: "string" },
  "blas-threads": { type: "string" },
  rounds: { type: "string" },
  "block-ms": { type: "string" },
  "profile-worst": { type: "string" },
  "results-dir": { type: "string" },
});
const ZOO = resolve(import.meta.dir, "..", "..", "tests", "zoo", "models");
const modelsDir = resolve((values.models as string | undefined) ?? ZOO);
const cores = (values.cores as string | undefined) ?? "0,1";
const coreCount = cores === "none" ? navigator.hardwareConcurrency : expandCpuList(cores).length;
const blasThreads = intFlag(values["blas-threads"], coreCount, "blas-threads");
const rounds = Math.max(1, intFlag(values.rounds, 7, "rounds"));
const blockMs = Math.max(1, intFlag(values["block-ms"], 100, "block-ms"));
const profileWorst = intFlag(values["profile-worst"], 3, "profile-worst");
const all = readdirSync(modelsDir)
  .filter((m) => isReferenceBundle(join(modelsDir, m)))
  .sort();
const only = listFlag(values.only, all);

await reexecPinned(cores, blasThreads);

const result = new BenchResult("zoo-engine-vs-xla-cpu");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", {
  modelsDir,
  models: only,
  cores: cores === "none" ? "unpinned" : cores,
  coreCount,
  affinity: currentAffinity(),
  blasThreads,
  rounds,
  blockMs,
});

interface Row {
  model: string;
  batch: number;
  engineMs: number | null;
  xlaMs: number | null;
  ratio: number | null;
}
const rows: Row[] = [];
const backend = createReactantBackend();
let anchor: LineChild | null = null;
if (!jaxImportable()) result.note(`XLA CPU anchor skipped: ${python()} cannot import jax`);
else {
  anchor = new LineChild("jax-zoo-anchor", [python(), resolve(import.meta.dir, "..", "anchors", "jax_zoo_anchor.py")], {
    JAX_PLATFORMS: "cpu",
    PYTHONUNBUFFERED: "1",
  });
  const ready = await anchor.nextJson(180_000);
  result.figure("xla", { jax: ready.jax });
}

for (const model of only) {
  const dir = join(modelsDir, model);
  const bundle = await result.step(`${model}: load bundle`, () => loadBundle(dir));
  if (!bundle) continue;
  const weights = await uploadWeights(backend, bundle);
  for (const batch of bundle.manifest.compiledBatchSizes) {
    await result.step(`${model} b${batch}`, async () => {
      const row = await measure(dir, bundle, batch, weights);
      rows.push(row);
      result.ratio(
        `${model} b${batch} engine/xla-cpu`,
        { label: "engine/XLA median of paired turns", value: row.ratio },
        { label: "1", value: row.ratio === null ? null : 1 },
        "<= 2",
        `same ${cores === "none" ? "unpinned cores" : `cores ${cores}`}, ${rounds} turns each; medians ms: engine ${row.engineMs}, XLA ${row.xlaMs}`,
      );
    });
  }
  disposeAll(weights);
}

const ratios = rows.map((r) => r.ratio).filter((r): r is number => r !== null && r > 0);
const geomean = ratios.length ? Math.exp(ratios.reduce((a, r) => a + Math.log(r), 0) / ratios.length) : null;
result.figure("rows", rows);
result.figure("geometricMeanRatio", geomean === null ? null : round(geomean));
console.log("\nmodel              batch   engine ms     XLA ms    engine/XLA");
for (const r of rows) {
  console.log(
    `${r.model.padEnd(18)} ${String(r.batch).padStart(5)} ${fmt(r.engineMs, 11)} ${fmt(r.xlaMs, 10)} ${fmt(r.ratio, 12)}x`,
  );
}
console.log(`geometric mean engine/XLA: ${geomean === null ? "n/a" : geomean.toFixed(3)}x over ${ratios.length}`);

if (profileWorst > 0) {
  const worst = [...rows]
    .filter((r) => r.ratio !== null)
    .sort((a, b) => (b.ratio as number) - (a.ratio as number))
    .slice(0, profileWorst);
  const profiles: Record<string, unknown> = {};
  for (const w of worst) {
    await result.step(`${w.model} b${w.batch}: profile`, async () => {
      const bundle = await loadBundle(join(modelsDir, w.model));
      const module = moduleFor(bundle, w.batch);
      const { inputs } = referenceCase(bundle, w.batch);
      const args = bundle.weights.argumentOrder.map((n) => bundle.weights.tensor(n));
      const p = await profileExecution(await module.read(), [...inputs, ...args], { runs: 3, origin: module.path });
      profiles[`${w.model} b${w.batch}`] = { ratio: w.ratio, ...p };
      console.log(`\nprofile of ${w.model} b${w.batch} (${(w.ratio as number).toFixed(1)}x XLA):\n${p.text}`);
    });
  }
  result.figure("worstProfiles", profiles);
}

await anchor?.close();
await backend.dispose();
result.write();

async function measure(
  dir: string,
  bundle: Awaited<ReturnType<typeof loadBundle>>,
  batch: number,
  weights: DeviceBuffer[],
): Promise<Row> {
  const module = moduleFor(bundle, batch);
  const exe = await backend.compile({ bytes: await module.read(), format: module.format, origin: module.path }, {});
  const inputs = await uploadAll(backend, referenceCase(bundle, batch).inputs);
  const args = [...inputs, ...weights];
  try {
    const engineRun = () => runEngine(backend, exe, args);
    const engineOnce = Math.max(0.001, median([await engineRun(), await engineRun(), await engineRun()]));
    const engineBlock = Math.max(1, Math.round(blockMs / engineOnce));
    let xlaBlock = 0;
    if (anchor) {
      const loaded = await anchor.request(`load ${dir} ${batch}`, 300_000);
      if (!loaded.ok) throw new Error(`XLA CPU: ${String(loaded.error)}`);
      const probe = (await anchor.request(`time ${dir} ${batch} 3`)) as { times_ms: number[] };
      xlaBlock = Math.max(1, Math.round(blockMs / Math.max(0.001, median(probe.times_ms))));
    }
    const engineTimes: number[] = [];
    const xlaTimes: number[] = [];
    // Per turn pair: engine block median over the adjacent XLA block's median. Other work on the
    // shared cores changes both sides' speed over seconds; the median of these paired ratios
    // follows the two sides under the same load, where medians over the whole run need not.
    const pairRatios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which side goes first, so neither always follows the other's cache state.
      const sides = r % 2 === 0 ? ["engine", "xla"] : ["xla", "engine"];
      let engineBlockMs = 0;
      let xlaBlockMs = 0;
      for (const side of sides) {
        if (side === "engine") {
          const block: number[] = [];
          for (let i = 0; i < engineBlock; i++) block.push(await engineRun());
          engineTimes.push(...block);
          engineBlockMs = median(block);
        } else if (anchor) {
          const t = (await anchor.request(`time ${dir} ${batch} ${xlaBlock}`, 600_000)) as {
            ok: boolean;
            times_ms: number[];
            error?: string;
          };
          if (!t.ok) throw new Error(`XLA CPU: ${t.error}`);
          xlaTimes.push(...t.times_ms);
          xlaBlockMs = median(t.times_ms);
        }
      }
      if (xlaBlockMs > 0) pairRatios.push(engineBlockMs / xlaBlockMs);
    }
    const engineMs = round(median(engineTimes));
    const xlaMs = xlaTimes.length ? round(median(xlaTimes)) : null;
    result.figure(`${bundle.name} b${batch}`, {
      engine: summarize(engineTimes),
      xla: xlaTimes.length ? summarize(xlaTimes) : null,
      engineRuns: engineTimes.length,
      xlaRuns: xlaTimes.length,
      pairRatios: pairRatios.map((x) => round(x)),
    });
    return {
      model: bundle.name,
      batch,
      engineMs,
      xlaMs,
      ratio: pairRatios.length ? round(median(pairRatios)) : null,
    };
  } finally {
    disposeAll(inputs);
    exe.dispose();
  }
}

async function runEngine(be: AbstractBackend, exe: Executable, args: DeviceBuffer[]): Promise<number> {
  const t0 = performance.now();
  const outs = await be.execute(exe, args);
  const ms = performance.now() - t0;
  disposeAll(outs);
  return ms;
}

function fmt(v: number | null, width: number): string {
  return (v === null ? "n/a" : v < 10 ? v.toFixed(3) : v.toFixed(1)).padStart(width);
}

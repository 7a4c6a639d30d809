/**
 * The CPU engine's own threads (large fused elementwise trees split over a wasm pool) against
 * one thread, on zoo models in one process: blocks of runs take turns between 1 thread and
 * --threads (default: the cores this process may use; OpenBLAS keeps its own setting on both
 * sides), so both see the same machine speed. Per model and batch: each side's median and the
 * median over turn pairs of threaded / one-thread block medians. First, the pool's dispatch
 * cost: one call of an empty module on 2 threads against the same call on the calling thread.
 *
 *   bun bench/cpu/fused-threads.bench.ts [--only a,b] [--threads N] [--rounds 9] [--block-ms 150]
 *       [--ungoverned] [--results-dir D]
 */
import { readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { type AbstractBackend, type DeviceBuffer, type Executable, loadBundle, uploadAll } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { I32, name, op, section, vec } from "@xlaserve/backend-reactant/blas/wasm-encode.ts";
import { isReferenceBundle, referenceCase } from "@xlaserve/backend-reactant/conformance/bundle-case.ts";
import { engineThreads, setEngineThreads } from "@xlaserve/backend-reactant/parallel/threads.ts";
import { setFusedSimdGoverned } from "@xlaserve/backend-reactant/plan/fused-simd.ts";
import { WasmPool } from "@xlaserve/backend-reactant/parallel/wasm-pool.ts";
import { intFlag, listFlag, parseFlags } from "../lib/args.ts";
import { disposeAll, moduleFor, uploadWeights } from "../lib/bundle-io.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, percentile, round } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/fused-threads.bench.ts [options]
  --only a,b           zoo models (default gpt_decoder,bert_encoder,vit_encoder,transformer_f16,transformer_bf16,rnn_scan)
  --threads N          the threaded side (default: the cores available)
  --rounds N           turns per side per model and batch (default 9)
  --block-ms N         about this long per turn (default 150)
  --ungoverned         split every call worth it by its size, even where split calls come out
                       slower than one thread (the governor, parallel/split-governor.ts, off)
  --results-dir DIR    where the JSON goes (default bench/results)
`;
const { values } = parseFlags(USAGE, {
  only: { type: "string" },
  threads: { type: "string" },
  rounds: { type: "string" },
  "block-ms": { type: "string" },
  ungoverned: { type: "boolean" },
  "results-dir": { type: "string" },
});
const ZOO = resolve(import.meta.dir, "..", "..", "tests", "zoo", "models");
const all = readdirSync(ZOO).filter((m) => isReferenceBundle(join(ZOO, m)));
const only = listFlag(values.only, [
  "gpt_decoder",
  "bert_encoder",
  "vit_encoder",
  "transformer_f16",
  "transformer_bf16",
  "rnn_scan",
]).filter((m) => all.includes(m));
const threads = Math.max(2, intFlag(values.threads, availableParallelism(), "threads"));
const rounds = Math.max(1, intFlag(values.rounds, 9, "rounds"));
const blockMs = Math.max(1, intFlag(values["block-ms"], 150, "block-ms"));
const configured = engineThreads();
const governed = values.ungoverned !== true;
setFusedSimdGoverned(governed);

const result = new BenchResult("cpu-fused-threads");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", {
  models: only,
  threads,
  configured,
  governed,
  rounds,
  blockMs,
  cores: availableParallelism(),
});

/** A module importing a shared memory whose `run(n)` counts n down: n = 0 is an empty call. */
function countdownModule(pages: number): WebAssembly.Module {
  const body = [
    0,
    ...op.block,
    ...op.loop,
    ...op.get(0),
    0x45, // i32.eqz
    ...op.brIf(1),
    ...op.get(0),
    ...op.i32(1),
    ...op.i32Sub,
    ...op.set(0),
    ...op.br(0),
    ...op.end,
    ...op.end,
    ...op.end,
  ];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([[0x60, ...vec([[I32]]), ...vec([])]])),
    ...section(2, vec([[...name("e"), ...name("m"), 0x02, 0x03, 0x00, pages]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("run"), 0x00, 0]])),
    ...section(10, vec([[body.length, ...body]])),
  ];
  return new WebAssembly.Module(new Uint8Array(bytes));
}

function dispatchCost(): Record<string, number> {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const module = countdownModule(1);
  const run = new WebAssembly.Instance(module, { e: { m: memory } }).exports.run as (n: number) => void;
  const pool = new WasmPool(memory, 2);
  pool.governor.enabled = false;
  const id = pool.register(module);
  const shares = [[0], [0]];
  const times: number[] = [];
  for (let i = 0; i < 5200; i++) {
    const t0 = performance.now();
    pool.run(id, run, shares, 2);
    if (i >= 200) times.push((performance.now() - t0) * 1000);
  }
  pool.close();
  return { medianUs: round(median(times), 2), p90Us: round(percentile(times, 90), 2) };
}

const dispatch = dispatchCost();
result.figure("dispatch", dispatch);
console.log(`pool dispatch (empty call on 2 threads): median ${dispatch.medianUs} us, p90 ${dispatch.p90Us} us`);

const backend = createReactantBackend();
const rows: { model: string; batch: number; oneMs: number; threadedMs: number; ratio: number }[] = [];
for (const model of only) {
  const dir = join(ZOO, model);
  const bundle = await loadBundle(dir);
  const weights = await uploadWeights(backend, bundle);
  for (const batch of bundle.manifest.compiledBatchSizes) {
    const module = moduleFor(bundle, batch);
    const exe = await backend.compile({ bytes: await module.read(), format: module.format, origin: module.path }, {});
    const inputs = await uploadAll(backend, referenceCase(bundle, batch).inputs);
    const args = [...inputs, ...weights];
    const once = () => runOnce(backend, exe, args);
    const sides = [1, threads];
    for (const t of sides) {
      setEngineThreads(t);
      for (let i = 0; i < 3; i++) await once();
    }
    const block = Math.max(1, Math.round(blockMs / Math.max(0.001, median([await once(), await once()]))));
    const times: Record<number, number[]> = { 1: [], [threads]: [] };
    const pairs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const blockMedian: Record<number, number> = {};
      for (const t of r % 2 === 0 ? sides : [...sides].reverse()) {
        setEngineThreads(t);
        const ts: number[] = [];
        for (let i = 0; i < block; i++) ts.push(await once());
        (times[t] as number[]).push(...ts);
        blockMedian[t] = median(ts);
      }
      pairs.push((blockMedian[threads] as number) / (blockMedian[1] as number));
    }
    const row = {
      model,
      batch,
      oneMs: round(median(times[1] as number[])),
      threadedMs: round(median(times[threads] as number[])),
      ratio: round(median(pairs)),
    };
    rows.push(row);
    result.ratio(
      `${model} b${batch} ${threads} threads / 1`,
      { label: `${threads} threads`, value: row.threadedMs },
      { label: "1 thread", value: row.oneMs },
      undefined,
      `median over ${rounds} turn pairs of block medians: ${row.ratio}`,
    );
    disposeAll(inputs);
    exe.dispose();
  }
  disposeAll(weights);
}
setEngineThreads(configured);
result.figure("rows", rows);
console.log(`\nmodel              batch   1 thread ms   ${threads} threads ms   paired ratio`);
for (const r of rows)
  console.log(
    `${r.model.padEnd(18)} ${String(r.batch).padStart(5)} ${r.oneMs.toFixed(3).padStart(13)} ${r.threadedMs.toFixed(3).padStart(15)} ${r.ratio.toFixed(3).padStart(14)}`,
  );
await backend.dispose();
result.write();

async function runOnce(be: AbstractBackend, exe: Executable, args: DeviceBuffer[]): Promise<number> {
  const t0 = performance.now();
  const outs = await be.execute(exe, args);
  const ms = performance.now() - t0;
  disposeAll(outs);
  return ms;
}

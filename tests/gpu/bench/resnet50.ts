/**
 * ResNet-50 on the GPU through the PJRT backend, against JAX running the same module on the same
 * GPU in the same run (bench/anchors/jax_anchor.py). Not a test: a measurement for
 * bench/results/. Export the bundle first (not committed, ~100 MB):
 *
 *   python3 tools/export_jax_bundle.py resnet50 <dir> --batch-sizes 1,32 --jax-exported
 *   bun tests/gpu/bench/resnet50.ts <dir> [out.json]
 *
 * Per batch size: compile vs deserialize-and-load time, outputs of the compiled and the loaded
 * program compared byte for byte, execute latency (median of 50, on the loaded program so the
 * autotuner's choice is fixed) against JAX's, and process start to first result from the
 * serialized program against JAX with a warm persistent compilation cache. Finally it compiles
 * the module twice more with default and with deterministic options and compares the bits.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { createPjrtBackend } from "../../../packages/backend-pjrt/src/index.ts";
import { bundleCases, maxAbsDiff, sameBytes } from "../support/bundles.ts";
import { gpuPlugin } from "../support/plugin.ts";
import { childOutputEquals, runReloadChild, writeReloadJob } from "../support/reload-job.ts";
import { median, round } from "../support/results.ts";

const bundle = resolve(process.argv[2] ?? "");
const outFile = process.argv[3];
const RUNS = 50;
const ROOT = resolve(import.meta.dir, "../../..");
const ANCHOR = join(ROOT, "bench/anchors/jax_anchor.py");

const plugin = await gpuPlugin();
if ("skip" in plugin) {
  console.log(JSON.stringify({ skipped: plugin.skip }));
  process.exit(0);
}
const backend = createPjrtBackend({ pluginPath: plugin.path, isolateCompile: false });

function jax(args: string[]): Record<string, unknown> {
  const t = performance.now();
  const r = Bun.spawnSync(["python3", ANCHOR, ...args], { stderr: "pipe" });
  const wallMs = performance.now() - t;
  const line = r.stdout.toString().trim().split("\n").pop() ?? "";
  try {
    return { ...JSON.parse(line), wallMs: round(wallMs, 1) };
  } catch {
    return { error: r.stderr.toString().slice(-800), wallMs };
  }
}

const results: Record<string, unknown>[] = [];
const cases = bundleCases(bundle);
for (const c of cases) {
  const entry: Record<string, unknown> = { model: "resnet50", batch: c.batch };
  let t = performance.now();
  const compiled = await backend.compile(c.module, {});
  entry.compileMs = round(performance.now() - t, 1);
  const bytes = await backend.serialize(compiled);
  entry.serializedBytes = bytes.byteLength;
  const loads: number[] = [];
  let loaded = await backend.deserialize(bytes, {});
  for (let i = 0; i < 5; i++) {
    loaded.dispose();
    t = performance.now();
    loaded = await backend.deserialize(bytes, {});
    loads.push(performance.now() - t);
  }
  entry.deserializeAndLoadMs = { median: round(median(loads), 2), all: loads.map((x) => round(x, 2)) };
  entry.compileOverLoad = round((entry.compileMs as number) / median(loads), 1);

  const [input, ...weights] = c.args as [HostTensor, ...HostTensor[]];
  const w = [];
  for (const x of weights) w.push(await backend.upload(x));
  const x = await backend.upload(input);
  const outA = await backend.execute(compiled, [x, ...w]);
  const outB = await backend.execute(loaded, [x, ...w]);
  const hostA = await Promise.all(outA.map((o) => backend.download(o)));
  const hostB = await Promise.all(outB.map((o) => backend.download(o)));
  entry.byteIdenticalAfterDeserialize = hostA.every((h, i) => sameBytes(h, hostB[i] as HostTensor));
  if (c.expectedGpu.length)
    entry.maxAbsDiffVsJaxGpu = hostB.map((h, i) => maxAbsDiff(h, c.expectedGpu[i] as HostTensor));
  for (const o of [...outA, ...outB]) o.dispose();

  const times: number[] = [];
  for (let i = 0; i < RUNS + 5; i++) {
    const s = performance.now();
    const outs = await backend.execute(loaded, [x, ...w]);
    if (i >= 5) times.push(performance.now() - s);
    for (const o of outs) o.dispose();
  }
  entry.executeMedianMs = round(median(times));
  const anchor = jax(["latency", bundle, "--batch", String(c.batch), "--platform", "cuda", "--runs", String(RUNS)]);
  entry.jaxLatency = anchor;
  const jaxMs = Number(anchor.median_ms ?? anchor.medianMs ?? Number.NaN);
  entry.latencyOverJax = Number.isFinite(jaxMs) ? round(median(times) / jaxMs) : null;

  // Process start to first result: a fresh Bun process loading the serialized program, against
  // a fresh JAX process with a warm persistent compilation cache (second of two runs).
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-resnet-"));
  const { job, jobFile } = writeReloadJob(dir, plugin.path, bytes, c.args);
  const { timing: childTiming, wallMs: childWall } = runReloadChild(jobFile);
  entry.freshProcessFromSerialized = { ...childTiming, wallMs: round(childWall, 1) };
  entry.freshProcessByteIdentical = hostB.every((h, i) => childOutputEquals(job, i, h));
  const cacheDir = join(dir, "jax-cache");
  jax(["first-result", bundle, "--batch", String(c.batch), "--platform", "cuda", "--cache-dir", cacheDir]);
  const warm = jax(["first-result", bundle, "--batch", String(c.batch), "--platform", "cuda", "--cache-dir", cacheDir]);
  entry.jaxFirstResultWarmCache = warm;
  const ours = Number(childTiming.processStartToFirstResultMs);
  const theirs = Number(warm.in_process_ms);
  entry.firstResultOverJax = Number.isFinite(ours / theirs) ? round(ours / theirs) : null;
  entry.firstResultWallOverJaxWall = round(childWall / Number(warm.wallMs));

  // Compiling the same module twice: same bits? Default options, then deterministic ones.
  const reference = hostA;
  const twoCompiles: Record<string, unknown>[] = [];
  for (const options of [{}, { deterministic: true }]) {
    const bits: Uint8Array[] = [];
    const outputs: HostTensor[][] = [];
    for (let i = 0; i < 2; i++) {
      const s = performance.now();
      const exe = await backend.compile(c.module, options);
      const ms = performance.now() - s;
      bits.push(await backend.serialize(exe));
      const outs = await backend.execute(exe, [x, ...w]);
      outputs.push(await Promise.all(outs.map((o) => backend.download(o))));
      for (const o of outs) o.dispose();
      exe.dispose();
      if (i === 0) twoCompiles.push({ deterministic: "deterministic" in options, compileMs: round(ms, 1) });
    }
    const last = twoCompiles[twoCompiles.length - 1] as Record<string, unknown>;
    const [o1, o2] = outputs as [HostTensor[], HostTensor[]];
    last.sameOutputsTwice = o1.every((t, i) => sameBytes(t, o2[i] as HostTensor));
    last.sameExecutableTwice = Buffer.from(bits[0] ?? []).equals(Buffer.from(bits[1] ?? []));
    last.sameOutputsAsFirstCompile = o1.every((t, i) => sameBytes(t, reference[i] as HostTensor));
    last.maxAbsDiffVsJaxGpu = o1.map((t, i) => maxAbsDiff(t, c.expectedGpu[i] as HostTensor));
  }
  entry.twoCompiles = twoCompiles;

  x.dispose();
  for (const b of w) b.dispose();
  compiled.dispose();
  loaded.dispose();
  results.push(entry);
  console.error(JSON.stringify(entry));
}
await backend.dispose();
const report = { bench: "resnet50", runs: RUNS, results };
if (outFile) writeFileSync(outFile, `${JSON.stringify(report, null, 2)}\n`);
console.log(JSON.stringify(report));

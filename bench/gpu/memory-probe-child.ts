/**
 * One model's memory probe in a fresh process (a fresh PJRT client, so no other model's compile
 * sets the peak), for bench/gpu/memory-probe.bench.ts:
 *
 *   bun bench/gpu/memory-probe-child.ts <plugin.so> <bundle dir> [weight-load repetitions]
 *
 * Uploads the weights, compiles every batch size in-process with the default options
 * (autotuning on), then probes every program on zero inputs twice: first WITHOUT resetting the
 * peak (the compile-time autotuning scratch still in the mark), then after resetPeakMemory()
 * (ARCHITECTURE rule 5). Scratch = peak - in use before the probe. Then times an on-demand
 * weight load: every weight uploaded again from the memory-mapped safetensors file.
 * Prints one JSON line.
 */
import { type Executable, type HostTensor, loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { disposeAll, moduleFor, uploadAll, uploadWeights, zeroInputs } from "../lib/bundle-io.ts";
import { median, round } from "../lib/stats.ts";

const [pluginPath, bundleDir, repsArg] = process.argv.slice(2);
if (!pluginPath || !bundleDir) {
  console.error("usage: bun bench/gpu/memory-probe-child.ts <plugin.so> <bundle dir> [repetitions]");
  process.exit(2);
}
const reps = Number(repsArg ?? 5);
const backend = createPjrtBackend({ pluginPath, isolateCompile: false });
const bundle = await loadBundle(bundleDir);
const m0 = backend.memoryStats();
let weights = await uploadWeights(backend, bundle);
const m1 = backend.memoryStats();
const programs: { batch: number; exe: Executable; compileMs: number; inputs: HostTensor[] }[] = [];
for (const batch of bundle.manifest.compiledBatchSizes) {
  const module = moduleFor(bundle, batch);
  const t0 = performance.now();
  const exe = await backend.compile({ bytes: await module.read(), format: module.format }, {});
  programs.push({ batch, exe, compileMs: performance.now() - t0, inputs: zeroInputs(bundle, module, batch) });
}
const afterCompile = backend.memoryStats();

async function probe(): Promise<{ beforeInUse: number; peak: number; scratch: number }> {
  const before = backend.memoryStats().inUseBytes;
  for (const p of programs) {
    const inputs = await uploadAll(backend, p.inputs);
    const outs = await backend.execute(p.exe, [...inputs, ...weights]);
    disposeAll(outs);
    disposeAll(inputs);
  }
  const peak = backend.memoryStats().peakBytes;
  return { beforeInUse: before, peak, scratch: peak - before };
}
const withoutReset = await probe();
backend.resetPeakMemory();
const afterReset = backend.memoryStats();
const withReset = await probe();

// On-demand weight load: what the worker does when an evicted / host-resident model is asked for.
const loads: number[] = [];
for (let i = 0; i < reps; i++) {
  disposeAll(weights);
  const t0 = performance.now();
  weights = await uploadWeights(backend, bundle);
  loads.push(performance.now() - t0);
}
disposeAll(weights);
for (const p of programs) p.exe.dispose();
console.log(
  JSON.stringify({
    model: bundle.name,
    weightBytes: bundle.weights.totalBytes,
    weightTensors: bundle.weights.argumentOrder.length,
    deviceBytesForWeights: m1.inUseBytes - m0.inUseBytes,
    limitBytes: m0.limitBytes,
    compileMs: programs.map((p) => ({ batch: p.batch, ms: round(p.compileMs) })),
    peakAfterCompileBytes: afterCompile.peakBytes,
    inUseAfterCompileBytes: afterCompile.inUseBytes,
    peakAfterResetBytes: afterReset.peakBytes,
    scratchWithoutResetBytes: withoutReset.scratch,
    scratchWithResetBytes: withReset.scratch,
    autotuneInflationBytes: withoutReset.scratch - withReset.scratch,
    probeWithoutReset: withoutReset,
    probeWithReset: withReset,
    weightLoadMs: { median: round(median(loads)), all: loads.map((x) => round(x)) },
  }),
);
await backend.dispose();

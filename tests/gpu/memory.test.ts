import { describe, expect, test } from "bun:test";
import { type HostTensor, createLogger } from "@xlaserve/core";
import { deviceMemoryFigures } from "../../apps/worker/src/memory/device-memory-figures.ts";
import { NvidiaSmiMemory } from "../../apps/worker/src/memory/process-device-memory.ts";
import { gpuBackend } from "./support/backend.ts";
import { bundleCases } from "./support/bundles.ts";
import { recordResult } from "./support/results.ts";

const backend = await gpuBackend();
const MB = 1024 * 1024;

describe.skipIf(!backend)("memory stats on the GPU", () => {
  test("ClearMemoryStats brings the peak down to what is in use", async () => {
    if (!backend) return;
    const c = bundleCases("cnn").at(-1);
    if (!c) throw new Error("no cnn case");
    const start = backend.memoryStats();
    const exe = await backend.compile(c.module, {});
    const args = await Promise.all(c.args.map((a: HostTensor) => backend.upload(a)));
    const afterCompile = backend.memoryStats();
    backend.resetPeakMemory();
    const afterReset = backend.memoryStats();
    expect(afterReset.peakBytes).toBe(afterReset.inUseBytes);
    expect(afterReset.peakBytes).toBeLessThanOrEqual(afterCompile.peakBytes);
    const outs = await backend.execute(exe, args);
    const afterRun = backend.memoryStats();
    expect(afterRun.peakBytes).toBeGreaterThanOrEqual(afterRun.inUseBytes);
    recordResult("memory", {
      model: `${c.model} b${c.batch}`,
      startMB: toMB(start),
      afterCompileAndUploadMB: toMB(afterCompile),
      afterClearMemoryStatsMB: toMB(afterReset),
      afterOneRunMB: toMB(afterRun),
      runScratchPeakMB: (afterRun.peakBytes - afterReset.inUseBytes) / MB,
    });
    for (const b of [...args, ...outs]) b.dispose();
    exe.dispose();
  }, 120_000);
});

describe.skipIf(!backend)("the worker_device_memory_* figures on the GPU", () => {
  test("the allocator reports its pool and largest free block; the driver this process's bytes", async () => {
    if (!backend) return;
    const c = bundleCases("mlp").at(-1);
    if (!c) throw new Error("no mlp case");
    const args = await Promise.all(c.args.map((a: HostTensor) => backend.upload(a)));
    const stats = backend.memoryStats();
    const warnings: string[] = [];
    const log = createLogger({ level: "warn", sink: (line) => warnings.push(line) });
    const processUsedBytes = await new NvidiaSmiMemory(log).sample();
    const f = deviceMemoryFigures({ stats, host: false, budgetLimitBytes: null, processUsedBytes });
    recordResult("device-memory-figures", { ...f, warnings });
    // XLA's BFC allocator sets both; without them the series have no sample (see the result).
    expect(stats.poolBytes).toBeGreaterThanOrEqual(stats.inUseBytes);
    expect(stats.largestFreeBlockBytes).toBeGreaterThan(0);
    expect(f.fragmentationRatio).toBeGreaterThan(0);
    expect(f.fragmentationRatio).toBeLessThanOrEqual(1);
    // nvidia-smi is on the GPU host: the driver counts at least the allocator's pool for us.
    expect(warnings).toEqual([]);
    expect(processUsedBytes).toBeGreaterThanOrEqual(stats.poolBytes ?? 0);
    for (const b of args) b.dispose();
  }, 120_000);
});

function toMB(s: { inUseBytes: number; peakBytes: number; limitBytes: number | null }) {
  return {
    inUse: +(s.inUseBytes / MB).toFixed(2),
    peak: +(s.peakBytes / MB).toFixed(2),
    limit: s.limitBytes === null ? null : +(s.limitBytes / MB).toFixed(0),
  };
}

import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
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

function toMB(s: { inUseBytes: number; peakBytes: number; limitBytes: number | null }) {
  return {
    inUse: +(s.inUseBytes / MB).toFixed(2),
    peak: +(s.peakBytes / MB).toFixed(2),
    limit: s.limitBytes === null ? null : +(s.limitBytes / MB).toFixed(0),
  };
}

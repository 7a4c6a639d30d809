import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@xlaserve/core";
import { deviceMemoryFigures } from "../src/memory/device-memory-figures.ts";
import { NvidiaSmiMemory, processBytesFromComputeApps } from "../src/memory/process-device-memory.ts";

const MiB = 1024 * 1024;

describe("device-memory figures", () => {
  test("an accelerator: the allocator's figures; out of pool is what the driver counts beyond the pool", () => {
    const f = deviceMemoryFigures({
      stats: {
        inUseBytes: 300 * MiB,
        peakBytes: 700 * MiB,
        limitBytes: 1000 * MiB,
        poolBytes: 1000 * MiB,
        largestFreeBlockBytes: 350 * MiB,
      },
      host: false,
      budgetLimitBytes: 4000 * MiB,
      processUsedBytes: 1450 * MiB,
    });
    expect(f).toEqual({
      inUseBytes: 300 * MiB,
      peakInUseBytes: 700 * MiB,
      limitBytes: 1000 * MiB, // the device's, not the budget's
      freeBytes: 700 * MiB,
      poolBytes: 1000 * MiB,
      largestFreeBlockBytes: 350 * MiB,
      fragmentationRatio: 0.5,
      processUsedBytes: 1450 * MiB,
      outOfPoolBytes: 450 * MiB,
    });
  });

  test("an accelerator that reports no pool: out of pool counts from the limit (a preallocated arena)", () => {
    const f = deviceMemoryFigures({
      stats: { inUseBytes: 10, peakBytes: 10, limitBytes: 100 },
      host: false,
      budgetLimitBytes: null,
      processUsedBytes: 130,
    });
    expect(f.poolBytes).toBeNull();
    expect(f.largestFreeBlockBytes).toBeNull();
    expect(f.fragmentationRatio).toBeNull();
    expect(f.outOfPoolBytes).toBe(30);
  });

  test("nothing measured stays null: no limit, no driver figure", () => {
    const f = deviceMemoryFigures({
      stats: { inUseBytes: 10, peakBytes: 10, limitBytes: null },
      host: false,
      budgetLimitBytes: 500,
      processUsedBytes: null,
    });
    expect([f.limitBytes, f.freeBytes, f.processUsedBytes, f.outOfPoolBytes]).toEqual([null, null, null, null]);
  });

  test("host memory (CPU engine): the budget's limit, all free memory one block, the resident set beside the arena", () => {
    const f = deviceMemoryFigures({
      stats: { inUseBytes: 40, peakBytes: 90, limitBytes: null, poolBytes: 60 },
      host: true,
      budgetLimitBytes: 1000,
      processUsedBytes: 500,
    });
    expect(f.limitBytes).toBe(1000);
    expect(f.freeBytes).toBe(960);
    expect(f.largestFreeBlockBytes).toBe(960);
    expect(f.fragmentationRatio).toBe(1);
    expect(f.outOfPoolBytes).toBe(440);
  });
});

describe("nvidia-smi's compute apps", () => {
  const out = "4711, 1234\n999, 77\n4711, 16\n";
  test("this PID's lines, summed, in bytes", () => {
    expect(processBytesFromComputeApps(out, 4711)).toBe(1250 * MiB);
    expect(processBytesFromComputeApps(out, 999)).toBe(77 * MiB);
  });
  test("a PID the driver does not list, or a value it cannot give, is unknown", () => {
    expect(processBytesFromComputeApps(out, 5)).toBeNull();
    expect(processBytesFromComputeApps("4711, [N/A]\n", 4711)).toBeNull();
    expect(processBytesFromComputeApps("", 4711)).toBeNull();
  });
});

describe("the driver's figure through nvidia-smi", () => {
  const logger = () => {
    const lines: string[] = [];
    return { lines, log: createLogger({ level: "warn", sink: (l) => lines.push(l) }) };
  };

  test("without nvidia-smi: no figure, said once", async () => {
    const { lines, log } = logger();
    const smi = new NvidiaSmiMemory(log, null);
    expect(await smi.sample()).toBeNull();
    expect(await smi.sample()).toBeNull();
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain("nvidia-smi not found");
  });

  test("nvidia-smi failing: no figure, said once", async () => {
    const { lines, log } = logger();
    expect(await new NvidiaSmiMemory(log, "/bin/false").sample()).toBeNull();
    expect(lines[0]).toContain("nvidia-smi exited with 1");
  });

  test("this process's line of the query, in bytes, reused within the refresh interval", async () => {
    // A stand-in printing what nvidia-smi prints for the query (nvidia-smi cannot run here).
    const dir = mkdtempSync(join(tmpdir(), "xlaserve-smi-"));
    const tool = join(dir, "nvidia-smi");
    writeFileSync(tool, `#!/bin/sh\necho "1, 5"\necho "${process.pid}, 812"\ndate +%N >> ${dir}/calls\n`);
    chmodSync(tool, 0o755);
    try {
      const smi = new NvidiaSmiMemory(logger().log, tool);
      expect(await smi.sample()).toBe(812 * MiB);
      expect(await smi.sample()).toBe(812 * MiB);
      expect(readFileSync(join(dir, "calls"), "utf8").trim().split("\n").length).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

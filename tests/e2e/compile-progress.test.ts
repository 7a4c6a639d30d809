/**
 * A long compile says so in the log while it runs (per model and program), instead of a silence
 * that looks like a hang. Compiles are slowed and the report interval shortened for the test.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startCpuWorker } from "./cpu-worker.ts";
import { collectLogs, makeRepo } from "./helpers.ts";

const repo = makeRepo(["mlp"]);
afterAll(() => repo.cleanup());

describe("compile progress", () => {
  test("a program still compiling is logged every interval, naming the model and program", async () => {
    const logs = collectLogs();
    const saved = { delay: process.env.XLASERVE_TEST_COMPILE_DELAY_MS, every: process.env.XLASERVE_TEST_PROGRESS_MS };
    process.env.XLASERVE_TEST_COMPILE_DELAY_MS = "900";
    process.env.XLASERVE_TEST_PROGRESS_MS = "250";
    try {
      const worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: false } });
      await worker.stop();
    } finally {
      process.env.XLASERVE_TEST_COMPILE_DELAY_MS = saved.delay;
      process.env.XLASERVE_TEST_PROGRESS_MS = saved.every;
      if (saved.delay === undefined) delete process.env.XLASERVE_TEST_COMPILE_DELAY_MS;
      if (saved.every === undefined) delete process.env.XLASERVE_TEST_PROGRESS_MS;
    }
    const progress = logs.lines.filter((l) => String(l.msg).startsWith("still compiling mlp/"));
    // Two programs of about 0.9 s each, reported every 0.25 s: several lines for each.
    const modules = new Set(progress.map((l) => l.module));
    expect(modules.size).toBe(2);
    expect(progress.length).toBeGreaterThanOrEqual(4);
    for (const l of progress) {
      expect(l.model).toBe("mlp");
      expect(l.seconds as number).toBeGreaterThan(0);
    }
    // And nothing once the programs are there.
    const loaded = logs.lines.findIndex((l) => l.msg === "model loaded");
    expect(logs.lines.slice(loaded).some((l) => String(l.msg).startsWith("still compiling"))).toBe(false);
  }, 60_000);
});

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWorker } from "../src/index.ts";
import { collectLogs, inferJson, makeRepo, readReference } from "../../../tests/e2e/helpers.ts";

const repo = makeRepo(["mlp", "cnn"]);
const stateDir = mkdtempSync(join(tmpdir(), "xlaserve-figures-"));
afterAll(() => {
  repo.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

async function start() {
  const logs = collectLogs();
  const worker = await startWorker({
    env: {},
    repository: repo.repository,
    port: 0,
    engineThread: false,
    logger: logs.logger,
    config: { cache: { stateDir }, repository: { dynamic: false } },
  });
  return { worker, logs };
}

describe("stored probe figures (CPU engine, program cache)", () => {
  test("a warm start takes the figures the cold start measured, then warms up beside serving", async () => {
    const cold = await start();
    const measured = Object.fromEntries(cold.worker.registry.models().map((m) => [m.name, m.scratchBytes]));
    expect(cold.worker.registry.models().every((m) => m.probe?.source === "measured")).toBe(true);
    expect(String(cold.logs.find("weight budget resolved")[0]?.figures)).toBe("2 measured, 0 stored");
    const coldBudget = cold.worker.registry.currentBudget();
    await cold.worker.stop();

    const warm = await start();
    const models = warm.worker.registry.models();
    expect(models.every((m) => m.probe?.source === "stored")).toBe(true);
    expect(Object.fromEntries(models.map((m) => [m.name, m.scratchBytes]))).toEqual(measured);
    expect(warm.worker.registry.currentBudget()).toEqual(coldBudget);
    expect(String(warm.logs.find("weight budget resolved")[0]?.figures)).toBe("0 measured, 2 stored");
    expect(warm.logs.lines.some((l) => String(l.msg).startsWith("ready in") && typeof l.phases === "object")).toBe(
      true,
    );
    await warm.worker.registry.warmUpPending();
    expect(models.every((m) => m.isWarm())).toBe(true);
    const ref = readReference("mlp").get(1);
    const res = await inferJson(warm.worker.url, "mlp", ref?.inputs ?? new Map());
    expect(res.status).toBe(200);
    await warm.worker.stop();
  });

  test("figures of another identity are measured again (rule 5 probe)", async () => {
    // Figures stored under another identity (other weights, shapes, partition) must not count.
    const first = await start();
    const m = first.worker.registry.models()[0];
    expect(m?.probe?.source).toBe("stored");
    await first.worker.stop();
    const { ProgramCache } = await import("@xlaserve/cache");
    const cache = await ProgramCache.open({ stateDir, onWarning: () => {} });
    const db = (cache as unknown as { dbPath: string }).dbPath;
    cache.close();
    const { Database } = await import("bun:sqlite");
    const sqlite = new Database(db);
    sqlite.exec("UPDATE probe_figures SET identity = identity || '|other'");
    sqlite.close();
    const again = await start();
    expect(again.worker.registry.models().every((x) => x.probe?.source === "measured" && x.probe.peakReset)).toBe(true);
    await again.worker.stop();
  });
});

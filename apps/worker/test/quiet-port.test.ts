import { afterEach, describe, expect, test } from "bun:test";
import { startWorker } from "../src/index.ts";
import { quietPort } from "../src/http/quiet-port.ts";
import { type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "../../../tests/e2e/helpers.ts";
import { FakeBackend, fakePrograms } from "./fake-backend.ts";

let repo: TempRepo | null = null;
afterEach(() => {
  repo?.cleanup();
  repo = null;
});

describe("the port stays open until it has been quiet", () => {
  test("an idle server is quiet after quietMs", async () => {
    const t0 = performance.now();
    await quietPort({ pendingRequests: 0 }, { quietMs: 50 });
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(50);
    expect(ms).toBeLessThan(1_000);
  });

  test("a request in progress restarts the wait; maxMs bounds it", async () => {
    const server = { pendingRequests: 1 };
    setTimeout(() => (server.pendingRequests = 0), 150);
    const t0 = performance.now();
    await quietPort(server, { quietMs: 50 });
    // pending until 150 ms, then quiet for 50 more (seen at the 10 ms polls)
    expect(performance.now() - t0).toBeGreaterThanOrEqual(180);
    const t1 = performance.now();
    await quietPort({ pendingRequests: 1 }, { quietMs: 50, maxMs: 120 });
    const capped = performance.now() - t1;
    expect(capped).toBeGreaterThanOrEqual(120);
    expect(capped).toBeLessThan(1_000);
  });

  test("a request sent just after stop() began is answered 503, not reset", async () => {
    repo = makeRepo(["mlp"]);
    const backend = new FakeBackend();
    const worker = await startWorker({
      env: {},
      repository: repo.repository,
      port: 0,
      backend,
      programs: fakePrograms(backend),
      logger: collectLogs().logger,
      config: { repository: { dynamic: false } },
    });
    const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
    expect((await inferJson(worker.url, "mlp", inputs)).status).toBe(200);
    const stopping = worker.stop();
    await Bun.sleep(20);
    const late = await inferJson(worker.url, "mlp", inputs).catch((e: unknown) => ({ status: String(e) }));
    await stopping;
    expect(late.status).toBe(503);
    // and once stopped, the port is closed
    await expect(fetch(`${worker.url}/v2/health/live`)).rejects.toThrow();
  });
});

import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { collectLogs, makeRepo } from "../../../tests/e2e/helpers.ts";
import { freshDatabase, repoPostgres } from "../../../tests/support/postgres.ts";
import { startWorker } from "../src/index.ts";

/** The worker with the fleet cache: its metrics, and a catalog it cannot reach. */
const repos: ReturnType<typeof makeRepo>[] = [];
afterAll(() => {
  for (const r of repos) r.cleanup();
});

function scratch(): string {
  const r = makeRepo([]);
  repos.push(r);
  return r.root;
}

async function start(cache: Record<string, string>) {
  const repo = makeRepo(["mlp", "cnn"]);
  repos.push(repo);
  const logs = collectLogs();
  const worker = await startWorker({
    env: {},
    repository: repo.repository,
    port: 0,
    grpcPort: 0,
    engineThread: false,
    logger: logs.logger,
    config: { cache: { stateDir: repo.stateDir, ...cache }, repository: { dynamic: false } },
  });
  return { worker, logs, repo };
}

async function fleetFigures(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^worker_fleet_programs\{event="([a-z_]+)"\} ([0-9.]+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

test("an unreachable catalog does not stop the worker: it says so and serves with its own cache", async () => {
  const blobs = join(scratch(), "blobs");
  const { worker, logs } = await start({ store: blobs, catalog: "postgres://u:secret@127.0.0.1:1/none" });
  try {
    const line = logs.find("fleet cache unavailable: this worker compiles and caches its programs on its own")[0];
    expect(String(line?.error)).toContain("postgres://u:***@127.0.0.1:1/none");
    expect(String(line?.error)).not.toContain("secret");
    expect(worker.registry.loadedNames().sort()).toEqual(["cnn", "mlp"]);
    expect((await fetch(`${worker.url}/v2/health/ready`)).status).toBe(200);
    expect(await fleetFigures(worker.url)).toEqual({});
  } finally {
    await worker.stop();
  }
}, 60_000);

const pg = repoPostgres();
test.skipIf("skip" in pg)(
  "/metrics counts what the fleet did: one worker publishes, the next fetches",
  async () => {
    if ("skip" in pg) return;
    await using db = await freshDatabase(pg.url, "worker");
    const blobs = join(scratch(), "blobs");
    const first = await start({ store: blobs, catalog: db.url });
    const published = await fleetFigures(first.worker.url);
    await first.worker.stop();
    expect(published).toMatchObject({ published: 4, fetched: 0, bad_blob: 0, unavailable: 0 });
    const second = await start({ store: blobs, catalog: db.url });
    try {
      expect(await fleetFigures(second.worker.url)).toMatchObject({ published: 0, fetched: 4, bad_blob: 0 });
      expect(second.logs.find("program cache shared by the fleet")).toHaveLength(1);
    } finally {
      await second.worker.stop();
    }
  },
  60_000,
);

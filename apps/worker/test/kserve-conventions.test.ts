import { expect, test } from "bun:test";
import { resolveWorkerConfig } from "../src/index.ts";
import { fleetOptions } from "../src/start/fleet-options.ts";

test("under KServe (STORAGE_URI set) the worker serves /mnt/models on 0.0.0.0:8080 (gRPC 8081) by default", () => {
  const config = resolveWorkerConfig({ env: { STORAGE_URI: "s3://models/mlp" } });
  expect(config.repository.path).toBe("/mnt/models");
  expect(config.server).toMatchObject({ host: "0.0.0.0", port: 8080, grpcPort: 8081 });
  expect(resolveWorkerConfig({ env: { STORAGE_URI: "gs://m", PORT: "9001" } }).server.port).toBe(9001);
});

test("KServe's conventions yield to the environment and flags", () => {
  const env = { STORAGE_URI: "s3://models/mlp", XLASERVE_PORT: "7000", XLASERVE_MODEL_REPOSITORY: "/srv/models" };
  const config = resolveWorkerConfig({ env });
  expect([config.repository.path, config.server.port]).toEqual(["/srv/models", 7000]);
  expect(resolveWorkerConfig({ env, port: 7100 }).server.port).toBe(7100);
});

test("without STORAGE_URI nothing changes", () => {
  const config = resolveWorkerConfig({ env: {} });
  expect([config.repository.path, config.server.host, config.server.port]).toEqual([
    "examples/models",
    "127.0.0.1",
    8000,
  ]);
});

test("the fleet cache is on when cache.store is set; a PostgreSQL catalog without a store is refused", () => {
  expect(fleetOptions(resolveWorkerConfig({ env: {} }))).toBeUndefined();
  const shared = resolveWorkerConfig({
    env: { XLASERVE_CACHE__CATALOG: "postgres://u:p@db/x", XLASERVE_CACHE__STORE: "/shared/programs" },
  });
  expect(fleetOptions(shared)).toEqual({ catalog: "postgres://u:p@db/x", store: "/shared/programs", leaseMs: 30_000 });
  const noStore = resolveWorkerConfig({ env: { XLASERVE_CACHE__CATALOG: "postgres://db/x" } });
  expect(() => fleetOptions(noStore)).toThrow(/cache.catalog is a PostgreSQL URL but cache.store is not set/);
  expect(() => resolveWorkerConfig({ env: { XLASERVE_CACHE__CATALOG: "mysql://db/x" } })).toThrow(/cache.catalog/);
});

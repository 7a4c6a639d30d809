import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheVerify } from "../src/cli/verify.ts";
import { ProgramCache } from "../src/program-cache.ts";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend } from "./support/hash-backend.ts";
import { StringOut } from "./support/string-out.ts";

test("cache verify checks every fleet program in full and drops the damaged ones", async () => {
  using tmp = tempDir();
  const fleet = { catalog: "sqlite", store: join(tmp.path, "blobs") };
  const stateDir = join(tmp.path, "state");
  const bundle = writeBundle(join(tmp.path, "repo"), "m", MODULES);
  const cache = await ProgramCache.open({ stateDir, fleet, onWarning: () => {} });
  const backend = new HashBackend(BASE_IDENTITY);
  for (const module of bundle.modules) await cache.getOrCompile({ bundle, module, backend, options: {} });
  const programs = await cache.fleet!.catalog.programs();
  expect(programs.length).toBe(2);
  cache.close();
  await cache.closed;

  const damaged = join(fleet.store, programs[0]!.blob);
  const bytes = readFileSync(damaged);
  bytes[bytes.length - 7]! ^= 0x10;
  writeFileSync(damaged, bytes);

  const out = new StringOut();
  const report = await cacheVerify({ stateDir, out, fleet });
  expect(report.fleet).toMatchObject({ checked: 2, ok: 1 });
  expect(report.fleet!.removed.map((r) => [r.key, r.reason])).toEqual([
    [programs[0]!.key, "sha256 differs from the catalog's"],
  ]);
  expect(out.text).toContain("verified 2 fleet programs: 1 ok");
  const after = await ProgramCache.open({ stateDir, fleet, onWarning: () => {} });
  expect((await after.fleet!.catalog.programs()).map((p) => p.key)).toEqual([programs[1]!.key]);
  after.close();
  await after.closed;
});

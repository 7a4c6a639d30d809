import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { DAMAGED_SUFFIX, reopenIndexDbSync } from "../src/db/open.ts";
import * as schema from "../src/db/schema.ts";
import { IndexStore } from "../src/index-store.ts";
import { ProgramCache } from "../src/program-cache.ts";
import type { BundleWithModules } from "../src/types.ts";
import type { CacheWarning } from "../src/warnings.ts";
import { reloadBundle, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend } from "./support/hash-backend.ts";

/**
 * One damaged page of the index, each page in turn: the index is derivable from the entry files,
 * so a damaged one is set aside, rebuilt and served from, never fatal and never wrong.
 */
const options = { deterministic: true };
const tmp = tempDir();
afterAll(() => tmp[Symbol.dispose]());
const FILES = ["model.b1.mlir", "model.b2.mlir", "model.b4.mlir"];
const NAMES = Array.from({ length: 24 }, (_, i) => `m${i}`);
const PAGE = 4096;

/** A real index of 24 bundles x 3 programs, checkpointed into its main file. */
async function buildIndex(): Promise<{ bytes: Buffer; bundles: BundleWithModules[] }> {
  const cache = await ProgramCache.open({ stateDir: join(tmp.path, "state"), onWarning: () => {} });
  const backend = new HashBackend(BASE_IDENTITY);
  const bundles: BundleWithModules[] = [];
  for (const name of NAMES) {
    const bundle = writeBundle(tmp.path, name, Object.fromEntries(FILES.map((f) => [f, `module @${name}_${f} {}\n`])));
    bundles.push(bundle);
    cache.syncModuleHashes(bundle);
    for (const module of bundle.modules) await cache.getOrCompile({ bundle, module, backend, options });
  }
  const path = cache.dbPath;
  cache.close();
  const raw = new Database(path);
  raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  raw.close();
  return { bytes: readFileSync(path), bundles };
}

/** Overwrites 64 bytes spread over one page, past its header. */
function damage(bytes: Buffer, page: number): Buffer {
  const out = Buffer.from(bytes);
  for (let i = 0; i < 64; i++) out[page * PAGE + 1024 + i * 40] = (i * 131 + 7) & 255;
  return out;
}

const built = buildIndex();

test("any one damaged page: the worker opens, every program is a hit, the index matches the files", async () => {
  const { bytes, bundles } = await built;
  const pages = bytes.length / PAGE;
  expect(pages).toBeGreaterThan(8);
  let reset = 0;
  for (let page = 1; page < pages; page++) {
    const stateDir = join(tmp.path, `state-page-${page}`);
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(join(stateDir, "xlaserve.sqlite"), damage(bytes, page));
    const warnings: CacheWarning[] = [];
    // Before: "database disk image is malformed" from open on some pages (every start exited),
    // and on others rows that no file backs.
    const cache = await ProgramCache.open({ stateDir, onWarning: (w) => warnings.push(w) });
    const backend = new HashBackend(BASE_IDENTITY);
    const outcomes: string[] = [];
    for (const b of bundles) {
      const bundle = reloadBundle(b.dir, b.name, FILES);
      cache.syncModuleHashes(bundle);
      for (const module of bundle.modules)
        outcomes.push((await cache.getOrCompile({ bundle, module, backend, options })).outcome);
    }
    const rows = cache.ls();
    cache.close();
    expect({ page, hits: outcomes.filter((o) => o === "hit").length, compiles: backend.compiles }).toEqual({
      page,
      hits: NAMES.length * FILES.length,
      compiles: 0,
    });
    expect({ page, rows: rows.length, allOnDisk: rows.every((r) => existsSync(r.path)) }).toEqual({
      page,
      rows: NAMES.length * FILES.length,
      allOnDisk: true,
    });
    if (warnings.some((w) => w.kind === "index-reset")) {
      reset++;
      expect(existsSync(join(stateDir, `xlaserve.sqlite${DAMAGED_SUFFIX}`))).toBe(true);
    }
  }
  // Most pages hold rows or b-tree structure; damage to one is found at open and repaired.
  expect(reset).toBeGreaterThan(pages / 3);
}, 60_000);

test("a page found damaged in use is replaced and the call answered from the rebuilt index", async () => {
  const { bytes } = await built;
  const stateDir = join(tmp.path, "state-in-use");
  mkdirSync(stateDir, { recursive: true });
  const path = join(stateDir, "xlaserve.sqlite");
  // Every data page damaged, opened without the open's integrity check: as if the disk went
  // bad after the worker started.
  let bad: Buffer = Buffer.from(bytes);
  for (let page = 2; page < bytes.length / PAGE; page++) bad = damage(bad, page);
  writeFileSync(path, bad);
  const sqlite = new Database(path, { strict: true });
  const conn = { sqlite, db: drizzle({ client: sqlite, schema }), ino: statSync(path).ino };
  const warnings: CacheWarning[] = [];
  const store = new IndexStore(conn, (damaged, why) => reopenIndexDbSync(path, damaged, why, (w) => warnings.push(w)));
  let rebuilt = 0;
  store.onRebuilt = () => {
    rebuilt++;
    store.registerBundle({ dir: "/bundles/a", name: "a" }, 1);
  };
  expect(store.bundles()).toEqual([{ dir: "/bundles/a", name: "a" }]);
  expect(rebuilt).toBe(1);
  expect(warnings.map((w) => w.kind)).toEqual(["index-reset"]);
  expect(existsSync(`${path}${DAMAGED_SUFFIX}`)).toBe(true);
  expect(store.totals()).toEqual({ entries: 0, bytes: 0 });
  store.sqlite.close();
});

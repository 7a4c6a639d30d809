import { expect, test } from "bun:test";
import { copyFileSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, PROGRAM_BYTES } from "./support/hash-backend.ts";
import { openTestCache } from "./support/open-cache.ts";

const options = { deterministic: true };

test("the index records hits, timings and sizes; counters follow", async () => {
  using tmp = tempDir();
  const { cache } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY);
  const module = bundle.modules[0]!;
  const miss = await cache.getOrCompile({ bundle, module, backend, options });
  const hit1 = await cache.getOrCompile({ bundle, module, backend, options });
  await cache.getOrCompile({ bundle, module, backend, options });
  expect([miss.outcome, hit1.outcome]).toEqual(["miss", "hit"]);
  expect(miss.compileMs).toBeGreaterThanOrEqual(0);
  expect(miss.loadMs).toBeNull();
  expect(hit1.loadMs).toBeGreaterThanOrEqual(0);
  expect(hit1.compileMs).toBeNull();
  const [row] = cache.ls();
  expect(row).toMatchObject({
    bundle: "m",
    moduleFile: "model.b1.mlir",
    moduleSha256: module.sha256,
    hitCount: 2,
    partition: miss.partition,
  });
  expect(row!.sizeBytes).toBe(miss.sizeBytes);
  expect(row!.sizeBytes).toBeGreaterThan(PROGRAM_BYTES);
  expect(row!.lastHitAt).toBeGreaterThanOrEqual(row!.createdAt);
  expect(cache.counters).toMatchObject({
    hits: 2,
    misses: 1,
    compiles: 1,
    loads: 2,
    entries: 1,
    bytes: miss.sizeBytes,
  });
  cache.close();
});

test("the index is rebuilt from the files after its deletion, and repaired when it disagrees", async () => {
  using tmp = tempDir();
  let { cache } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY);
  const paths: string[] = [];
  for (const module of bundle.modules)
    paths.push((await cache.getOrCompile({ bundle, module, backend, options })).entryPath);
  cache.syncModuleHashes(bundle);
  const before = cache.ls();
  const dbPath = cache.dbPath;
  cache.close();

  for (const suffix of ["", "-wal", "-shm"]) rmSync(dbPath + suffix, { force: true });
  const reopened = await openTestCache(tmp.path);
  cache = reopened.cache;
  expect(cache.ls()).toEqual([]); // nothing tells a fresh index where bundles are...
  const sync = cache.syncModuleHashes(bundle); // ...until the bundle loads again
  expect(sync.index.added).toBe(2);
  const after = cache.ls();
  expect(after.map((r) => [r.path, r.moduleFile, r.sizeBytes, r.moduleSha256, r.partition])).toEqual(
    before.map((r) => [r.path, r.moduleFile, r.sizeBytes, r.moduleSha256, r.partition]),
  );
  expect(reopened.warnings.some((w) => w.kind === "index-repaired")).toBe(true);
  // Still hits: no recompile after losing the index.
  for (const module of bundle.modules)
    expect((await cache.getOrCompile({ bundle, module, backend, options })).outcome).toBe("hit");
  expect(backend.compiles).toBe(2);

  // A row without a file, and a file without a row: ls repairs both.
  rmSync(paths[0]!);
  const foreignDir = join(bundle.dir, ".cache", after[1]!.partition);
  const extra = join(foreignDir, `${"a".repeat(64)}-${"b".repeat(16)}.xprog`);
  copyFileSync(paths[1]!, extra); // valid header, but the name does not match it
  const rows = cache.ls();
  expect(rows.map((r) => r.path)).toEqual([paths[1]!]);
  expect(existsSync(extra)).toBe(false);
  expect(cache.counters.entries).toBe(1);
  cache.close();
});

test("a database file that is not a database is recreated and rebuilt, not a crash", async () => {
  using tmp = tempDir();
  const first = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY);
  await first.cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend, options });
  const dbPath = first.cache.dbPath;
  first.cache.close();
  for (const suffix of ["-wal", "-shm"]) rmSync(dbPath + suffix, { force: true });
  writeFileSync(dbPath, "this is not a sqlite database, just garbage bytes ".repeat(100));
  const second = await openTestCache(tmp.path);
  expect(second.warnings.some((w) => w.kind === "index-reset")).toBe(true);
  second.cache.syncModuleHashes(bundle);
  expect(second.cache.ls().length).toBe(1);
  expect((await second.cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend, options })).outcome).toBe(
    "hit",
  );
  second.cache.close();
});

test("verify removes bad entries; prune evicts least recently hit first down to max bytes", async () => {
  using tmp = tempDir();
  const { cache } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", { ...MODULES, "model.b4.mlir": "module @b4 {}\n" });
  const backend = new HashBackend(BASE_IDENTITY);
  const r: Record<string, { entryPath: string; sizeBytes: number }> = {};
  for (const module of bundle.modules) {
    r[module.file] = await cache.getOrCompile({ bundle, module, backend, options });
    await Bun.sleep(5);
  }
  // b1 is hit last, so b8 is now the least recently used, then b4.
  await Bun.sleep(5);
  await cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend, options });
  expect(cache.verify()).toMatchObject({ checked: 3, ok: 3, removed: [] });

  // Entry sizes differ by a few bytes (the header records the compile time), so the target is
  // exactly what the two most recently hit entries take.
  const keep = r["model.b1.mlir"]!.sizeBytes + r["model.b4.mlir"]!.sizeBytes;
  const pruned = cache.prune(keep);
  expect(pruned.removed.map((x) => x.moduleFile)).toEqual(["model.b8.mlir"]);
  expect(existsSync(r["model.b8.mlir"]!.entryPath)).toBe(false);
  expect(pruned.remainingBytes).toBeLessThanOrEqual(keep);

  const bad = new Uint8Array(await Bun.file(r["model.b4.mlir"]!.entryPath).bytes());
  bad[bad.length - 1]! ^= 0xff;
  writeFileSync(r["model.b4.mlir"]!.entryPath, bad);
  const v = cache.verify();
  expect(v.removed.map((p) => p.reason)).toEqual(["payload-checksum"]);
  expect(existsSync(r["model.b4.mlir"]!.entryPath)).toBe(false);
  expect(cache.ls().map((x) => x.moduleFile)).toEqual(["model.b1.mlir"]);
  expect(cache.prune(0).removed.length).toBe(1);
  expect(cache.counters).toMatchObject({ entries: 0, bytes: 0, evictions: 2 });
  expect(() => cache.prune(-1)).toThrow();
  cache.close();
});

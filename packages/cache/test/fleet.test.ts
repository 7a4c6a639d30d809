import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freshDatabase, repoPostgres } from "../../../tests/support/postgres.ts";
import { Catalog } from "../src/fleet/catalog.ts";
import { openCatalogDb } from "../src/fleet/catalog-db.ts";
import { programKey } from "../src/fleet/fleet.ts";
import { ProgramCache } from "../src/program-cache.ts";
import type { CacheWarning } from "../src/warnings.ts";
import { MODULES, reloadBundle, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, TestExecutable, deriveProgram, runProgram } from "./support/hash-backend.ts";

/**
 * Workers of a fleet, each with its own copy of the model repository and state directory,
 * sharing one catalog and one blob directory: the shared program cache end to end in one
 * process (the multi-host version with real worker processes is tests/fleet/).
 */
const pg = repoPostgres();
const tmp = tempDir("xlaserve-fleet-");
let pgDb: Awaited<ReturnType<typeof freshDatabase>> | undefined;
beforeAll(async () => {
  if ("url" in pg) pgDb = await freshDatabase(pg.url, "fleet");
});
afterAll(async () => {
  await pgDb?.[Symbol.asyncDispose]();
  tmp[Symbol.dispose]();
});

const hash = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
const options = { deterministic: true };

async function expectedOutputs(): Promise<Record<string, string>> {
  const backend = new HashBackend(BASE_IDENTITY);
  const out: Record<string, string> = {};
  for (const [file, text] of Object.entries(MODULES)) {
    out[file] = hash(
      await runProgram(backend, new TestExecutable(deriveProgram(new TextEncoder().encode(text), options))),
    );
  }
  return out;
}

for (const dialect of ["sqlite", "postgres"] as const) {
  const skip = dialect === "postgres" && "skip" in pg ? pg.skip : null;
  describe.skipIf(skip !== null)(`a fleet on a ${dialect} catalog`, () => {
    const root = join(tmp.path, dialect);
    const store = join(root, "blobs");
    const source = writeBundle(join(root, "origin"), "m", MODULES);
    let n = 0;
    const caches: ProgramCache[] = [];
    afterAll(async () => {
      for (const c of caches) {
        c.close();
        await c.closed;
      }
    });

    /** A new worker: its own repository copy; its own state directory unless the catalog is SQLite. */
    async function worker(opts: { leaseMs?: number; compileDelayMs?: number } = {}) {
      const id = n++;
      const repo = join(root, `host${id}`);
      cpSync(source.dir, join(repo, "m"), { recursive: true });
      const bundle = reloadBundle(join(repo, "m"), "m", Object.keys(MODULES));
      const warnings: CacheWarning[] = [];
      const cache = await ProgramCache.open({
        stateDir: join(root, dialect === "sqlite" ? "state" : `state${id}`),
        dbPath: join(repo, "index.sqlite"),
        onWarning: (w) => warnings.push(w),
        fleet: {
          catalog: dialect === "sqlite" ? "sqlite" : pgDb!.url,
          store,
          holder: `host${id}`,
          pollMs: 10,
          ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
        },
      });
      caches.push(cache);
      const backend = new HashBackend(BASE_IDENTITY, { compileDelayMs: opts.compileDelayMs ?? 0 });
      const get = async (file: string) => {
        const module = bundle.modules.find((m) => m.file === file)!;
        const r = await cache.getOrCompile({ bundle, module, backend, options });
        return { ...r, output: hash(await runProgram(backend, r.executable)) };
      };
      return { cache, bundle, backend, warnings, get, id };
    }

    const catalog = async () =>
      new Catalog(await openCatalogDb(dialect === "sqlite" ? "sqlite" : pgDb!.url, join(root, "state")), "test");

    test("workers started together compile each program once; a later one compiles nothing", async () => {
      const expected = await expectedOutputs();
      const first = await Promise.all([1, 2, 3].map(() => worker({ compileDelayMs: 200 })));
      const results = await Promise.all(first.map((w) => Promise.all(Object.keys(MODULES).map((f) => w.get(f)))));
      for (const [i, file] of Object.keys(MODULES).entries()) {
        expect(new Set(results.map((rs) => rs[i]!.output))).toEqual(new Set([expected[file]!]));
        expect(results.map((rs) => rs[i]!.from).sort()).toEqual(["compile", "fleet", "fleet"]);
      }
      expect(first.reduce((s, w) => s + w.backend.compiles, 0)).toBe(2);
      const cat = await catalog();
      const compiles = await cat.compiles();
      expect(compiles.length).toBe(2);
      expect(compiles.every((c) => c.finishedAt !== null)).toBe(true);
      expect((await cat.programs()).length).toBe(2);
      await cat.conn.close();

      const late = await worker();
      for (const file of Object.keys(MODULES)) {
        const r = await late.get(file);
        expect([r.outcome, r.from, r.output]).toEqual(["hit", "fleet", expected[file]!]);
      }
      expect(late.backend.compiles).toBe(0);
      // It keeps a local copy: its next start needs no fleet at all.
      expect(readdirSync(join(late.bundle.dir, ".cache")).length).toBeGreaterThan(0);
      const again = await late.get("model.b1.mlir");
      expect(again.from).toBe("local");
      for (const w of [...first, late]) expect(w.warnings.filter((x) => x.kind.startsWith("fleet"))).toEqual([]);
    });

    test("a damaged blob is dropped and rebuilt once, never served", async () => {
      const expected = await expectedOutputs();
      const cat = await catalog();
      const seed = await worker();
      await seed.get("model.b8.mlir"); // published by the first test already: a fleet hit
      const key = programKey(
        seed.cache.keyFor({ bundle: seed.bundle, module: seed.bundle.modules[1]!, backend: seed.backend, options }),
      );
      const before = await cat.program(key);
      const blobPath = join(store, before!.blob);
      const bytes = readFileSync(blobPath);
      bytes[bytes.length - 100]! ^= 0x40; // a payload byte: only the checksums can tell
      writeFileSync(blobPath, bytes);

      const w = await worker();
      const r = await w.get("model.b8.mlir");
      expect([r.from, r.output]).toEqual(["compile", expected["model.b8.mlir"]!]);
      expect(w.warnings.map((x) => x.kind)).toContain("fleet-bad-blob");
      expect(w.warnings.find((x) => x.kind === "fleet-bad-blob")!.message).toContain("checksum");
      const after = await cat.program(key);
      expect(after!.blobSha256).not.toBe(before!.blobSha256);
      expect((await cat.compiles(key)).length).toBe(2); // the first compile and the one rebuild

      const next = await worker();
      const r2 = await next.get("model.b8.mlir");
      expect([r2.from, r2.output]).toEqual(["fleet", expected["model.b8.mlir"]!]);
      await cat.conn.close();
    });

    test("a read-only model directory still shares programs: fetched into memory, compiled ones published", async () => {
      const expected = await expectedOutputs();
      // Root ignores permissions: a file where `.cache/` should be fails writes like a read-only mount.
      const ro = await worker();
      writeFileSync(join(ro.bundle.dir, ".cache"), "read-only volume");
      const r = await ro.get("model.b1.mlir"); // published by the first test
      expect([r.outcome, r.from, r.output]).toEqual(["hit", "fleet", expected["model.b1.mlir"]!]);
      expect(ro.backend.compiles).toBe(0);

      const file = "model.b8.mlir";
      writeFileSync(join(ro.bundle.dir, file), `${MODULES[file]}// read-only v2\n`);
      const changed = reloadBundle(ro.bundle.dir, "m", [file]);
      const c1 = await ro.cache.getOrCompile({
        bundle: changed,
        module: changed.modules[0]!,
        backend: ro.backend,
        options,
      });
      expect(c1.from).toBe("compile");
      const other = await worker();
      writeFileSync(join(other.bundle.dir, file), `${MODULES[file]}// read-only v2\n`);
      const same = reloadBundle(other.bundle.dir, "m", [file]);
      const c2 = await other.cache.getOrCompile({
        bundle: same,
        module: same.modules[0]!,
        backend: other.backend,
        options,
      });
      expect([c2.from, other.backend.compiles]).toEqual(["fleet", 0]);
      expect(hash(await runProgram(other.backend, c2.executable))).toBe(
        hash(await runProgram(ro.backend, c1.executable)),
      );
    });

    test("probe figures measured by one worker serve a worker that joins later, under the same identity only", async () => {
      const a = await worker();
      const ra = await a.get("model.b1.mlir");
      const probeKey = (path: string) => `${path}#v-b1`;
      const probeIdentity = (path: string) => `probe1|${path}|inputs [1]|weights 10|residency device`;
      a.cache.storeProbeFigures(probeKey(ra.entryPath), {
        identity: probeIdentity(ra.entryPath),
        scratchBytes: 4096,
        weightBytes: 10,
        measuredAt: Date.now(),
      });
      await Bun.sleep(200); // shared in the background
      const b = await worker();
      const rb = await b.get("model.b1.mlir");
      expect(rb.entryPath).not.toBe(ra.entryPath); // another host's path to the same program
      expect(b.cache.probeFigures(probeKey(rb.entryPath), probeIdentity(rb.entryPath))).toMatchObject({
        scratchBytes: 4096,
      });
      expect(b.cache.probeFigures(probeKey(rb.entryPath), `${probeIdentity(rb.entryPath)} other`)).toBeNull();
    });

    test("a lease whose holder died lapses and a waiting worker takes it over", async () => {
      const cat = await catalog();
      const w = await worker({ leaseMs: 600 });
      // A new module text, so its program is in no catalog yet.
      const file = "model.b1.mlir";
      writeFileSync(join(w.bundle.dir, file), `${MODULES[file]}// v2\n`);
      const bundle = reloadBundle(w.bundle.dir, "m", [file]);
      const key = programKey(w.cache.keyFor({ bundle, module: bundle.modules[0]!, backend: w.backend, options }));
      const ghost = new Catalog(cat.conn, "ghost");
      const held = await ghost.tryLease(key, 600); // taken, then never renewed: its holder is dead
      expect(held.held).toBe(true);
      const t0 = performance.now();
      const r = await w.cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend: w.backend, options });
      const waited = performance.now() - t0;
      expect(r.from).toBe("compile");
      expect(waited).toBeGreaterThan(300);
      expect(waited).toBeLessThan(10_000);
      expect(w.cache.fleet!.counters.takeovers).toBe(1);
      expect(w.warnings.find((x) => x.reason === "lease-lapsed")!.message).toContain("from ghost");
      await cat.conn.close();
    });
  });
}

test("a store setting that is a URL of another kind is refused, naming it", async () => {
  await expect(
    ProgramCache.open({ stateDir: join(tmp.path, "bad"), fleet: { catalog: "sqlite", store: "gs://bucket/x" } }),
  ).rejects.toThrow(/cache.store must be a directory or an s3:\/\/ URL, got "gs:\/\/bucket\/x"/);
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { freshDatabase, repoPostgres } from "../../../tests/support/postgres.ts";
import { Catalog } from "../src/fleet/catalog.ts";
import { type CatalogConnection, openCatalogDb } from "../src/fleet/catalog-db.ts";
import { tempDir } from "./support/fixtures.ts";

/** The same catalog tests on both dialects: the catalog code is one, so its behaviour must be. */
const pg = repoPostgres();
const dir = tempDir("xlaserve-catalog-");
let pgDb: Awaited<ReturnType<typeof freshDatabase>> | undefined;
beforeAll(async () => {
  if ("url" in pg) pgDb = await freshDatabase(pg.url, "catalog");
});
afterAll(async () => {
  await pgDb?.[Symbol.asyncDispose]();
  dir[Symbol.dispose]();
});

const dialects = [
  { name: "sqlite", skip: null as string | null, spec: () => "sqlite" },
  { name: "postgres", skip: "skip" in pg ? pg.skip : null, spec: () => pgDb!.url },
];

for (const d of dialects) {
  describe.skipIf(d.skip !== null)(`fleet catalog on ${d.name}`, () => {
    const conns: CatalogConnection[] = [];
    const open = async (holder: string) => {
      const conn = await openCatalogDb(d.spec(), join(dir.path, d.name));
      conns.push(conn);
      return new Catalog(conn, holder);
    };
    afterAll(async () => {
      for (const c of conns) await c.close();
    });

    test("of workers asking for one lease at once, exactly one gets it", async () => {
      const workers = await Promise.all(Array.from({ length: 6 }, (_, i) => open(`w${i}`)));
      const key = `p/race-${d.name}`;
      const got = await Promise.all(workers.map((w) => w.tryLease(key, 10_000)));
      expect(got.filter((g) => g.held).length).toBe(1);
      const winner = workers[got.findIndex((g) => g.held)]!;
      for (const g of got) if (!g.held) expect(g.holder).toBe(winner.holder);
      for (const g of got) if (!g.held) expect(g.expiresInMs).toBeGreaterThan(5_000);
    });

    test("a renewed lease stays held; a lapsed one is taken over and its old holder can no longer renew or release it", async () => {
      const [a, b] = [await open("a"), await open("b")];
      const key = `p/lapse-${d.name}`;
      // Generous margins: the test machine may stall a process for hundreds of milliseconds.
      const la = await a.tryLease(key, 2_000);
      if (!la.held) throw new Error("a should hold the lease");
      expect(la.tookOverFrom).toBeNull();
      await Bun.sleep(300);
      expect(await a.renew(key, la.token, 2_000)).toBe(true);
      await Bun.sleep(1_000); // renewed at 300 ms: held until 2.3 s
      expect((await b.tryLease(key, 300)).held).toBe(false);
      await Bun.sleep(1_500); // 2.8 s: no renewal since 300 ms, lapsed
      const lb = await b.tryLease(key, 5_000);
      if (!lb.held) throw new Error("b should have taken the lapsed lease over");
      expect(lb.tookOverFrom).toBe("a");
      expect(await a.renew(key, la.token, 300)).toBe(false);
      await a.release(key, la.token);
      expect((await a.tryLease(key, 300)).held).toBe(false); // b's lease survived a's release
      await b.release(key, lb.token);
      expect((await a.tryLease(key, 300)).held).toBe(true);
    });

    test("programs: published, read back, dropped only while they name the same blob", async () => {
      const c = await open("c");
      const key = `p/prog-${d.name}`;
      expect(await c.program(key)).toBeNull();
      const p = {
        key,
        partition: "p",
        entry: "e.xprog",
        blob: "p/e.1.xprog",
        blobSha256: "1".repeat(64),
        sizeBytes: 5_000_000_000,
        compileMs: 12.5,
      };
      await c.publish(p);
      const row = await c.program(key);
      expect(row).toMatchObject({ ...p, createdBy: "c" });
      expect(Number(row!.sizeBytes)).toBe(5_000_000_000); // beyond 32 bits, in both dialects
      expect(Math.abs(Number(row!.createdAt) - Date.now())).toBeLessThan(60_000);
      expect(await c.dropProgram(key, "2".repeat(64))).toBe(false);
      await c.publish({ ...p, blob: "p/e.2.xprog", blobSha256: "2".repeat(64) });
      expect((await c.program(key))!.blob).toBe("p/e.2.xprog");
      expect(await c.dropProgram(key, "2".repeat(64))).toBe(true);
      expect(await c.program(key)).toBeNull();
    });

    test("compiles are recorded when started and when finished", async () => {
      const c = await open("c");
      const key = `p/compiles-${d.name}`;
      await c.compileStarted(key, "t1");
      await c.compileStarted(key, "t2");
      await c.compileFinished("t2", 42);
      const rows = await c.compiles(key);
      expect(rows.map((r) => [r.token, r.finishedAt === null, r.compileMs])).toEqual([
        ["t1", true, null],
        ["t2", false, 42],
      ]);
    });
  });
}

test("a catalog setting that is neither sqlite nor a postgres URL is refused, naming it", async () => {
  await expect(openCatalogDb("mysql://x", dir.path)).rejects.toThrow(
    /cache.catalog must be "sqlite" or a postgres:\/\/ URL/,
  );
});

test.skipIf("skip" in pg)("an unreachable PostgreSQL catalog fails with its URL, password masked", async () => {
  const bad = "postgres://u:secret@127.0.0.1:1/db";
  const err = await openCatalogDb(bad, dir.path).catch((e: Error) => e);
  expect(String(err)).toContain("postgres://u:***@127.0.0.1:1/db");
  expect(String(err)).not.toContain("secret");
});

import { expect, test } from "bun:test";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { tryLock } from "../src/lock.ts";
import { ProgramCache } from "../src/program-cache.ts";
import type { CacheWarning } from "../src/warnings.ts";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend } from "./support/hash-backend.ts";

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const p = Bun.spawn([process.execPath, "-e", "0"]);
  await p.exited;
  return p.pid;
}

test("only one holder at a time; release lets the next in", () => {
  using tmp = tempDir();
  const path = join(tmp.path, "x.lock");
  const a = tryLock(path, { staleMs: 60_000 });
  expect(a).not.toBeNull();
  expect(tryLock(path, { staleMs: 60_000 })).toBeNull();
  a!.release();
  expect(existsSync(path)).toBe(false);
  const b = tryLock(path, { staleMs: 60_000 });
  expect(b).not.toBeNull();
  b!.release();
});

test("a lock whose owner died, or that went unrefreshed past staleMs, is taken over", async () => {
  using tmp = tempDir();
  const path = join(tmp.path, "x.lock");
  const stale: string[] = [];
  writeFileSync(path, JSON.stringify({ pid: await deadPid(), host: hostname(), token: "t1", createdAt: 0 }));
  expect(tryLock(path, { staleMs: 60_000, onStale: (_p, _o, why) => stale.push(why) })).toBeNull();
  expect(stale[0]).toContain("not running");
  const mine = tryLock(path, { staleMs: 60_000 });
  expect(mine).not.toBeNull();
  mine!.release();

  // A live owner (this process) that stopped refreshing: stale only by age.
  writeFileSync(path, JSON.stringify({ pid: process.pid, host: hostname(), token: "t2", createdAt: 0 }));
  expect(tryLock(path, { staleMs: 60_000 })).toBeNull();
  const old = new Date(Date.now() - 120_000);
  utimesSync(path, old, old);
  expect(tryLock(path, { staleMs: 60_000, onStale: (_p, _o, why) => stale.push(why) })).toBeNull();
  expect(stale[1]).toContain("not refreshed");
  tryLock(path, { staleMs: 60_000 })!.release();
});

test("a held lock's heartbeat keeps it fresh during a long compile", async () => {
  using tmp = tempDir();
  const path = join(tmp.path, "x.lock");
  const held = tryLock(path, { staleMs: 200 })!;
  await Bun.sleep(500);
  expect(tryLock(path, { staleMs: 200 })).toBeNull();
  held.release();
});

test("getOrCompile takes over a dead worker's compile lock and reports it", async () => {
  using tmp = tempDir();
  const warnings: CacheWarning[] = [];
  const cache = await ProgramCache.open({ stateDir: join(tmp.path, "state"), onWarning: (w) => warnings.push(w) });
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY);
  const args = { bundle, module: bundle.modules[0]!, backend, options: {} };
  const key = cache.keyFor(args);
  mkdirSync(dirname(key.path), { recursive: true });
  writeFileSync(
    `${key.path}.lock`,
    JSON.stringify({ pid: await deadPid(), host: hostname(), token: "dead", createdAt: 0 }),
  );
  const r = await cache.getOrCompile(args);
  expect(r.outcome).toBe("miss");
  expect(warnings.map((w) => w.kind)).toContain("stale-lock");
  expect(existsSync(`${key.path}.lock`)).toBe(false);
  cache.close();
});

test("in one process, concurrent requests for one entry compile once and each gets its own executable", async () => {
  using tmp = tempDir();
  const cache = await ProgramCache.open({ stateDir: join(tmp.path, "state"), onWarning: () => {} });
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY, { compileDelayMs: 100 });
  const args = { bundle, module: bundle.modules[0]!, backend, options: {} };
  const rs = await Promise.all([cache.getOrCompile(args), cache.getOrCompile(args), cache.getOrCompile(args)]);
  expect(rs.map((r) => r.outcome)).toEqual(["miss", "hit", "hit"]);
  expect(backend.compiles).toBe(1);
  expect(new Set(rs.map((r) => r.executable)).size).toBe(3);
  cache.close();
});

test("reconcile clears a crashed worker's lock and leftover temp files, and keeps a live one", async () => {
  using tmp = tempDir();
  const cache = await ProgramCache.open({ stateDir: join(tmp.path, "state"), onWarning: () => {} });
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const backend = new HashBackend(BASE_IDENTITY);
  const r = await cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend, options: {} });
  const dead = `${r.entryPath}.lock`;
  writeFileSync(dead, JSON.stringify({ pid: await deadPid(), host: hostname(), token: "dead", createdAt: 0 }));
  const live = tryLock(join(dirname(r.entryPath), "other.xprog.lock"), { staleMs: 60_000 })!;
  const leftover = join(dirname(r.entryPath), `.tmp-${"c".repeat(10)}.xprog.1.abc`);
  writeFileSync(leftover, "half an entry");
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(leftover, old, old);
  cache.ls();
  expect(existsSync(dead)).toBe(false);
  expect(existsSync(leftover)).toBe(false);
  expect(existsSync(live.path)).toBe(true);
  live.release();
  cache.close();
});

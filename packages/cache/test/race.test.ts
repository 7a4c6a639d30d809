import { expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { TestExecutable, deriveProgram, runProgram, HashBackend, BASE_IDENTITY } from "./support/hash-backend.ts";

const CHILD = join(import.meta.dir, "support", "race-child.ts");

interface ChildReport {
  pid: number;
  results: { file: string; outcome: string; output: string }[];
  warnings: string[];
  rows: number;
}

async function race(n: number, bundleDir: string, stateDir: string, compileLog: string): Promise<ChildReport[]> {
  // A common start time well after every child has opened the cache, so they really collide.
  const startAt = String(Date.now() + 1500);
  const procs = Array.from({ length: n }, () =>
    Bun.spawn([process.execPath, CHILD, bundleDir, stateDir, compileLog, startAt], { stdout: "pipe", stderr: "pipe" }),
  );
  return Promise.all(
    procs.map(async (p) => {
      const [out, err, code] = await Promise.all([
        new Response(p.stdout).text(),
        new Response(p.stderr).text(),
        p.exited,
      ]);
      if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
      return JSON.parse(out.trim().split("\n").at(-1)!) as ChildReport;
    }),
  );
}

test("processes racing on one empty cache: one compile per entry, all get correct programs", async () => {
  using tmp = tempDir();
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const stateDir = join(tmp.path, "state");
  const compileLog = join(tmp.path, "compiles.log");
  writeFileSync(compileLog, "");
  const backend = new HashBackend(BASE_IDENTITY);
  const expected: Record<string, string> = {};
  for (const m of bundle.modules) {
    const out = await runProgram(backend, new TestExecutable(deriveProgram(await m.read(), { deterministic: true })));
    expected[m.file] = new Bun.CryptoHasher("sha256").update(out).digest("hex");
  }

  const cold = await race(3, bundle.dir, stateDir, compileLog);
  const compiles = readFileSync(compileLog, "utf8").trim().split("\n");
  expect(compiles.length).toBe(bundle.modules.length); // one compile per entry, across all processes
  for (const file of Object.keys(MODULES)) {
    const outcomes = cold.map((c) => c.results.find((r) => r.file === file)!.outcome).sort();
    expect(outcomes).toEqual(["hit", "hit", "miss"]);
    for (const c of cold) expect(c.results.find((r) => r.file === file)!.output).toBe(expected[file]!);
  }
  for (const c of cold) {
    expect(c.warnings).toEqual([]); // nobody saw a torn or corrupt entry
    expect(c.rows).toBe(2);
  }

  // Delete the shared index: the next racers rebuild it from the files and still never compile.
  for (const suffix of ["", "-wal", "-shm"]) rmSync(join(stateDir, `xlaserve.sqlite${suffix}`), { force: true });
  const warm = await race(2, bundle.dir, stateDir, compileLog);
  expect(readFileSync(compileLog, "utf8").trim().split("\n").length).toBe(bundle.modules.length);
  for (const c of warm) {
    expect(c.results.map((r) => r.outcome)).toEqual(["hit", "hit"]);
    for (const r of c.results) expect(r.output).toBe(expected[r.file]!);
    expect(c.rows).toBe(2);
  }
}, 30_000);

import { expect, test } from "bun:test";
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import { decodeEntry, encodeEntry } from "../src/entry-format.ts";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, TestExecutable, deriveProgram, runProgram } from "./support/hash-backend.ts";
import { openTestCache } from "./support/open-cache.ts";

const options = { deterministic: true };

/** Deterministic PRNG so a failure names offsets that reproduce. */
function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function setup(root: string) {
  const { cache, warnings } = await openTestCache(root);
  const bundle = writeBundle(root, "m", MODULES);
  const module = bundle.modules[0]!;
  const backend = new HashBackend(BASE_IDENTITY);
  const first = await cache.getOrCompile({ bundle, module, backend, options });
  const expected = await runProgram(backend, new TestExecutable(deriveProgram(await module.read(), options)));
  expect(await runProgram(backend, first.executable)).toEqual(expected);
  const good = readFileSync(first.entryPath);
  const decoded = decodeEntry(good);
  if (!decoded.ok) throw new Error("fresh entry does not decode");
  return {
    cache,
    warnings,
    bundle,
    module,
    backend,
    expected,
    path: first.entryPath,
    good,
    headerLength: decoded.header.headerLength,
  };
}

test("bytes flipped at 20 random offsets across header and payload: each detected, removed, recompiled", async () => {
  using tmp = tempDir();
  const s = await setup(tmp.path);
  const rand = mulberry32(5);
  // Half the offsets in the header, half in the payload, so both checks are exercised.
  const offsets = Array.from({ length: 20 }, (_, i) =>
    i < 10
      ? Math.floor(rand() * s.headerLength)
      : s.headerLength + Math.floor(rand() * (s.good.length - s.headerLength)),
  );
  for (const offset of offsets) {
    const bad = new Uint8Array(s.good);
    bad[offset]! ^= 1 + Math.floor(rand() * 255);
    writeFileSync(s.path, bad);
    const warningsBefore = s.warnings.length;
    const compilesBefore = s.backend.compiles;
    const r = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
    expect(r.outcome, `offset ${offset}`).toBe("recompiled");
    expect(s.backend.compiles, `offset ${offset}`).toBe(compilesBefore + 1);
    expect(s.warnings.length, `offset ${offset}`).toBe(warningsBefore + 1);
    expect(s.warnings.at(-1)!.path).toBe(s.path);
    expect(await runProgram(s.backend, r.executable), `offset ${offset}`).toEqual(s.expected);
    // The replacement on disk is whole again and loads.
    const reread = decodeEntry(readFileSync(s.path));
    expect(reread.ok, `offset ${offset}`).toBe(true);
    const hit = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
    expect(hit.outcome).toBe("hit");
    expect(await runProgram(s.backend, hit.executable)).toEqual(s.expected);
  }
  expect(s.cache.counters.corruptEntries).toBe(20);
  expect(s.cache.counters.recompiles).toBe(20);
  s.cache.close();
});

test("truncated entries (empty, mid-header, mid-payload, one byte short) are recompiled", async () => {
  using tmp = tempDir();
  const s = await setup(tmp.path);
  for (const length of [
    0,
    5,
    Math.floor(s.headerLength / 2),
    s.headerLength,
    s.headerLength + 100,
    s.good.length - 1,
  ]) {
    writeFileSync(s.path, s.good);
    truncateSync(s.path, length);
    const r = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
    expect(r.outcome, `length ${length}`).toBe("recompiled");
    expect(r.rejected, `length ${length}`).toMatch(/truncated|bad-magic/);
    expect(await runProgram(s.backend, r.executable)).toEqual(s.expected);
  }
  s.cache.close();
});

test("an entry of another format version is removed and recompiled, reported as wrong-format", async () => {
  using tmp = tempDir();
  const s = await setup(tmp.path);
  const d = decodeEntry(s.good);
  if (!d.ok) throw new Error("bad setup");
  writeFileSync(s.path, encodeEntry(d.header.facts, d.header.sourceHash, d.header.optionsHash, d.payload, 99));
  const r = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
  expect(r.outcome).toBe("recompiled");
  expect(s.warnings.at(-1)!.kind).toBe("wrong-format");
  expect(await runProgram(s.backend, r.executable)).toEqual(s.expected);
  s.cache.close();
});

test("an intact entry holding another module's program (misnamed) is refused", async () => {
  using tmp = tempDir();
  const s = await setup(tmp.path);
  const other = s.bundle.modules[1]!;
  const o = await s.cache.getOrCompile({ bundle: s.bundle, module: other, backend: s.backend, options });
  writeFileSync(s.path, readFileSync(o.entryPath));
  const r = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
  expect(r.outcome).toBe("recompiled");
  expect(r.rejected).toBe("key-mismatch");
  expect(await runProgram(s.backend, r.executable)).toEqual(s.expected);
  s.cache.close();
});

test("an entry the backend refuses to deserialize is removed and recompiled, never thrown", async () => {
  using tmp = tempDir();
  const s = await setup(tmp.path);
  const d = decodeEntry(s.good);
  if (!d.ok) throw new Error("bad setup");
  // Intact by every checksum, but the payload is not a program this backend can load.
  writeFileSync(
    s.path,
    encodeEntry(d.header.facts, d.header.sourceHash, d.header.optionsHash, d.payload.subarray(0, 10)),
  );
  const r = await s.cache.getOrCompile({ bundle: s.bundle, module: s.module, backend: s.backend, options });
  expect(r.outcome).toBe("recompiled");
  expect(s.warnings.at(-1)!.kind).toBe("deserialize-failed");
  expect(await runProgram(s.backend, r.executable)).toEqual(s.expected);
  s.cache.close();
});

import { expect, test } from "bun:test";
import { copyFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { BackendIdentity } from "@xlaserve/core";
import { IDENTITY_FIELDS } from "../src/partition.ts";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, TestExecutable, deriveProgram, runProgram } from "./support/hash-backend.ts";
import { openTestCache } from "./support/open-cache.ts";

/** One changed field per identity: each must get its own partition and its own compile. */
const VARIANTS: Record<(typeof IDENTITY_FIELDS)[number], string> = {
  backend: "reactant",
  platform: "rocm",
  buildId: "xla 0.5.2 plugin:0a1b2c3d",
  runtimeVersion: "12.9",
  deviceKind: "NVIDIA H100",
  computeCapability: "8.9",
};

test("an entry written under one identity is never read under another (each field varied)", async () => {
  using tmp = tempDir();
  const { cache, warnings } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const module = bundle.modules[0]!;
  const options = { deterministic: true };
  const base = new HashBackend(BASE_IDENTITY);
  const first = await cache.getOrCompile({ bundle, module, backend: base, options });
  expect(first.outcome).toBe("miss");

  for (const field of IDENTITY_FIELDS) {
    const identity: BackendIdentity = { ...BASE_IDENTITY, [field]: VARIANTS[field] };
    const other = new HashBackend(identity);
    const r = await cache.getOrCompile({ bundle, module, backend: other, options });
    expect(r.outcome, field).toBe("miss");
    expect(other.compiles, field).toBe(1);
    expect(other.deserializes, field).toBe(0);
    expect(r.partition, field).not.toBe(first.partition);
    // And the copy attack: the base entry placed in this identity's partition, under the name
    // this identity would look up, is refused by its header and recompiled.
    copyFileSync(first.entryPath, r.entryPath);
    const again = await cache.getOrCompile({ bundle, module, backend: other, options });
    expect(again.outcome, field).toBe("recompiled");
    expect(again.rejected, field).toBe("foreign-partition");
    expect(warnings.at(-1)?.code, field).toBe("CACHE_PARTITION_MISMATCH");
    expect(warnings.at(-1)?.message, field).toContain(field);
    expect(other.compiles, field).toBe(2);
  }

  // The base identity still hits its own entry, untouched by the others.
  const back = await cache.getOrCompile({ bundle, module, backend: base, options });
  expect(back.outcome).toBe("hit");
  expect(base.compiles).toBe(1);
  expect(await runProgram(base, back.executable)).toEqual(
    await runProgram(base, new TestExecutable(deriveProgram(await module.read(), options))),
  );
  expect(cache.counters.foreignEntries).toBe(IDENTITY_FIELDS.length);
  cache.close();
});

test("compile options are part of the key: other options never hit", async () => {
  using tmp = tempDir();
  const { cache } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  const module = bundle.modules[0]!;
  const backend = new HashBackend(BASE_IDENTITY);
  const a = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true } });
  const b = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: false } });
  const c = await cache.getOrCompile({
    bundle,
    module,
    backend,
    options: { deterministic: true, xlaFlags: { xla_gpu_autotune_level: 0 } },
  });
  const d = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true }, keyExtra: "env-A" });
  expect([a.outcome, b.outcome, c.outcome, d.outcome]).toEqual(["miss", "miss", "miss", "miss"]);
  expect(new Set([a.entryPath, b.entryPath, c.entryPath, d.entryPath]).size).toBe(4);
  expect(new Set([a.partition, b.partition, c.partition, d.partition]).size).toBe(1);
  expect(dirname(a.entryPath)).toBe(join(bundle.dir, ".cache", a.partition));
  expect((await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true } })).outcome).toBe("hit");
  expect(existsSync(join(bundle.dir, ".cache", a.partition))).toBe(true);
  cache.close();
});

import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODULES, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, TestExecutable, deriveProgram, runProgram } from "./support/hash-backend.ts";
import { openTestCache } from "./support/open-cache.ts";

// Tests run as root here, so permissions cannot make a directory unwritable; a plain file where
// `.cache/` should be fails every write the same way a read-only mount does.
test("a bundle whose .cache cannot be written still serves: compiled, warned, not cached", async () => {
  using tmp = tempDir();
  const { cache, warnings } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  writeFileSync(join(bundle.dir, ".cache"), "not a directory");
  const sync = cache.syncModuleHashes(bundle);
  expect(sync.droppedEntries).toEqual([]);
  const backend = new HashBackend(BASE_IDENTITY);
  const module = bundle.modules[0]!;
  for (let i = 0; i < 2; i++) {
    const r = await cache.getOrCompile({ bundle, module, backend, options: {} });
    expect(r.outcome).toBe("miss");
    expect(r.sizeBytes).toBe(0);
    const expected = await runProgram(backend, new TestExecutable(deriveProgram(await module.read(), {})));
    expect(await runProgram(backend, r.executable)).toEqual(expected);
  }
  expect(warnings.filter((w) => w.kind === "write-failed").length).toBe(3);
  expect(cache.ls()).toEqual([]);
  cache.close();
});

import { expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { moduleHashesPath, readModuleHashes } from "../src/module-hashes.ts";
import { MODULES, reloadBundle, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, TestExecutable, deriveProgram, runProgram } from "./support/hash-backend.ts";
import { openTestCache } from "./support/open-cache.ts";

const options = { deterministic: true };
const FILES = Object.keys(MODULES);

/** Two backends (two partitions) so "dropped in every partition" is observable. */
async function warmTwoPartitions(root: string) {
  const { cache, warnings } = await openTestCache(root);
  let bundle = writeBundle(root, "m", MODULES);
  cache.syncModuleHashes(bundle);
  const gpu = new HashBackend(BASE_IDENTITY);
  const cpu = new HashBackend({ ...BASE_IDENTITY, backend: "reactant", platform: "cpu", deviceKind: "cpu" });
  const paths: Record<string, string[]> = {};
  for (const backend of [gpu, cpu]) {
    for (const module of bundle.modules) {
      const r = await cache.getOrCompile({ bundle, module, backend, options });
      expect(r.outcome).toBe("miss");
      paths[module.file] = [...(paths[module.file] ?? []), r.entryPath];
    }
  }
  const reload = () => (bundle = reloadBundle(bundle.dir, "m", FILES));
  return {
    cache,
    warnings,
    get bundle() {
      return bundle;
    },
    reload,
    gpu,
    cpu,
    paths,
  };
}

test("mlir_hashes.json records every module's hash", async () => {
  using tmp = tempDir();
  const s = await warmTwoPartitions(tmp.path);
  const read = readModuleHashes(s.bundle.dir);
  expect(read.state).toBe("ok");
  if (read.state === "ok")
    expect(read.hashes).toEqual(Object.fromEntries(s.bundle.modules.map((m) => [m.file, m.sha256])));
  s.cache.close();
});

test("a changed module has its entries dropped in every partition; the others stay", async () => {
  using tmp = tempDir();
  const s = await warmTwoPartitions(tmp.path);
  writeFileSync(join(s.bundle.dir, "model.b1.mlir"), `${MODULES["model.b1.mlir"]}// retrained\n`);
  s.reload();
  const result = s.cache.syncModuleHashes(s.bundle);
  expect(result.changed).toEqual(["model.b1.mlir"]);
  expect([...result.droppedEntries].sort()).toEqual([...s.paths["model.b1.mlir"]!].sort());
  for (const p of s.paths["model.b1.mlir"]!) expect(existsSync(p)).toBe(false);
  for (const p of s.paths["model.b8.mlir"]!) expect(existsSync(p)).toBe(true);
  expect(s.warnings.some((w) => w.kind === "module-changed")).toBe(true);
  const hashes = JSON.parse(readFileSync(moduleHashesPath(s.bundle.dir), "utf8"));
  expect(hashes["model.b1.mlir"]).toBe(s.bundle.modules[0]!.sha256);

  for (const backend of [s.gpu, s.cpu]) {
    const b1 = await s.cache.getOrCompile({ bundle: s.bundle, module: s.bundle.modules[0]!, backend, options });
    expect(b1.outcome).toBe("miss");
    const expected = await runProgram(
      backend,
      new TestExecutable(deriveProgram(await s.bundle.modules[0]!.read(), options)),
    );
    expect(await runProgram(backend, b1.executable)).toEqual(expected);
    const b8 = await s.cache.getOrCompile({ bundle: s.bundle, module: s.bundle.modules[1]!, backend, options });
    expect(b8.outcome).toBe("hit");
  }
  s.cache.close();
});

test("a weights-only update keeps every entry", async () => {
  using tmp = tempDir();
  const s = await warmTwoPartitions(tmp.path);
  writeFileSync(join(s.bundle.dir, "weights.safetensors"), "weights v2, retrained");
  s.reload();
  const result = s.cache.syncModuleHashes(s.bundle);
  expect(result.changed).toEqual([]);
  expect(result.droppedEntries).toEqual([]);
  for (const backend of [s.gpu, s.cpu]) {
    for (const module of s.bundle.modules) {
      expect((await s.cache.getOrCompile({ bundle: s.bundle, module, backend, options })).outcome).toBe("hit");
    }
  }
  expect(s.gpu.compiles + s.cpu.compiles).toBe(4);
  s.cache.close();
});

test("a removed module's entries go; a lost or damaged mlir_hashes.json drops only orphans", async () => {
  using tmp = tempDir();
  const s = await warmTwoPartitions(tmp.path);
  // Damaged file, and meanwhile b1 changed: its old entries are orphans and go.
  writeFileSync(moduleHashesPath(s.bundle.dir), "{ not json");
  writeFileSync(join(s.bundle.dir, "model.b1.mlir"), `${MODULES["model.b1.mlir"]}// v2\n`);
  s.reload();
  const r1 = s.cache.syncModuleHashes(s.bundle);
  expect(r1.hashesFile).toBe("invalid");
  expect(s.warnings.some((w) => w.kind === "hashes-file-invalid")).toBe(true);
  expect(r1.droppedEntries.length).toBe(2);
  for (const p of s.paths["model.b8.mlir"]!) expect(existsSync(p)).toBe(true);
  expect(readModuleHashes(s.bundle.dir).state).toBe("ok");
  // b8 disappears from the bundle: its entries go too.
  const only = { ...s.bundle, modules: s.bundle.modules.filter((m) => m.file !== "model.b8.mlir") };
  const r2 = s.cache.syncModuleHashes(only);
  expect(r2.removed).toEqual(["model.b8.mlir"]);
  for (const p of s.paths["model.b8.mlir"]!) expect(existsSync(p)).toBe(false);
  s.cache.close();
});

test("a module that changed on disk after the bundle loaded is never compiled under the old name", async () => {
  using tmp = tempDir();
  const { cache } = await openTestCache(tmp.path);
  const bundle = writeBundle(tmp.path, "m", MODULES);
  writeFileSync(join(bundle.dir, "model.b1.mlir"), "module @changed {}\n");
  const backend = new HashBackend(BASE_IDENTITY);
  await expect(cache.getOrCompile({ bundle, module: bundle.modules[0]!, backend, options })).rejects.toMatchObject({
    code: "MODULE_INVALID",
  });
  expect(backend.compiles).toBe(0);
  cache.close();
});

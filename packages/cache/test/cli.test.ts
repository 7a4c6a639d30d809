import { expect, test } from "bun:test";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadBundle } from "@xlaserve/core";
import { cacheLs, cachePrune, cacheVerify, parseByteSize, precompileRepository } from "../src/cli/index.ts";
import { MODULE_HASHES_FILE } from "../src/layout.ts";
import { tempDir } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend } from "./support/hash-backend.ts";
import { StringOut } from "./support/string-out.ts";

const EXAMPLES = resolve(import.meta.dir, "../../../examples/models");

/** The example repository copied, so the test writes its .cache/ dirs in a temp dir. */
function copyExamples(root: string): string {
  const repo = join(root, "models");
  cpSync(EXAMPLES, repo, { recursive: true, filter: (src) => !src.includes(".cache") });
  return repo;
}

test("precompileRepository compiles every program of every bundle, then finds them all cached", async () => {
  using tmp = tempDir();
  const repo = copyExamples(tmp.path);
  const stateDir = join(tmp.path, "state");
  const backend = new HashBackend(BASE_IDENTITY);
  const out = new StringOut();
  const cold = await precompileRepository({
    repository: repo,
    backend,
    options: { deterministic: true },
    out,
    stateDir,
  });
  const expectedPrograms: string[] = [];
  for (const name of ["cnn", "mlp", "transformer"]) {
    for (const m of (await loadBundle(join(repo, name))).modules) expectedPrograms.push(`${name}/${m.file}`);
  }
  expect(cold.rows.map((r) => `${r.model}/${r.module}`)).toEqual(expectedPrograms);
  expect(cold.rows.every((r) => r.outcome === "miss" && r.bytes > 0)).toBe(true);
  expect(cold.failed).toBe(0);
  expect(backend.compiles).toBe(expectedPrograms.length);
  expect(out.text).toContain(`[########################] ${expectedPrograms.length}/${expectedPrograms.length}`);
  expect(out.text).toMatch(/model\s+module\s+outcome\s+ms\s+bytes/);
  expect(out.text).toContain(
    `${expectedPrograms.length} programs: ${expectedPrograms.length} compiled, 0 already cached, 0 failed`,
  );
  for (const name of ["cnn", "mlp", "transformer"])
    expect(existsSync(join(repo, name, ".cache", MODULE_HASHES_FILE))).toBe(true);

  const warm = await precompileRepository({
    repository: repo,
    backend,
    options: { deterministic: true },
    out: new StringOut(),
    stateDir,
  });
  expect(warm.rows.every((r) => r.outcome === "hit")).toBe(true);
  expect(backend.compiles).toBe(expectedPrograms.length);
});

test("a broken bundle is reported in the summary and the rest still compile", async () => {
  using tmp = tempDir();
  const repo = copyExamples(tmp.path);
  writeFileSync(join(repo, "mlp", "manifest.yaml"), "format_version: [broken");
  const out = new StringOut();
  const r = await precompileRepository({
    repository: repo,
    backend: new HashBackend(BASE_IDENTITY),
    options: {},
    out,
    stateDir: join(tmp.path, "state"),
  });
  expect(r.failed).toBe(1);
  expect(r.rows.find((x) => x.model === "mlp")?.outcome).toBe("failed");
  expect(r.rows.filter((x) => x.outcome === "miss").length).toBe(4);
  expect(out.text).toContain("failed: mlp/-:");
});

test("cache ls / verify / prune print tables and act on the repository's caches", async () => {
  using tmp = tempDir();
  const repo = copyExamples(tmp.path);
  const stateDir = join(tmp.path, "state");
  await precompileRepository({
    repository: repo,
    backend: new HashBackend(BASE_IDENTITY),
    options: {},
    out: new StringOut(),
    stateDir,
  });

  const ls = new StringOut();
  const rows = await cacheLs({ stateDir, out: ls });
  expect(rows.length).toBe(6);
  expect(ls.text).toMatch(/^model\s+module\s+partition/);
  expect(ls.text).toContain("mlp  ");
  expect(ls.text).toContain("6 entries");

  // Corrupt one entry behind the cache's back: verify finds, removes and lists it.
  const victim = rows.find((r) => r.bundle === "cnn")!;
  const bytes = readFileSync(victim.path);
  bytes[bytes.length - 10]! ^= 0x55;
  writeFileSync(victim.path, bytes);
  const vout = new StringOut();
  const v = await cacheVerify({ stateDir, out: vout });
  expect(v.removed.map((p) => p.path)).toEqual([victim.path]);
  expect(vout.text).toContain("payload-checksum");
  expect(vout.text).toContain("verified 6 entries: 5 ok");

  // With a fresh state dir, --repository finds the bundles by their .cache/ dirs.
  const pout = new StringOut();
  const p = await cachePrune({ stateDir: join(tmp.path, "other-state"), repository: repo, out: pout, maxBytes: 0 });
  expect(p.removed.length).toBe(5);
  expect(pout.text).toContain("pruned 5 entries");
  expect((await cacheLs({ stateDir, out: new StringOut() })).length).toBe(0);
});

test("byte sizes parse the way --max-bytes is written", () => {
  expect(parseByteSize("1048576")).toBe(1048576);
  expect(parseByteSize("500M")).toBe(500 * 1024 ** 2);
  expect(parseByteSize("1.5GiB")).toBe(1.5 * 1024 ** 3);
  expect(parseByteSize("2g")).toBe(2 * 1024 ** 3);
  expect(() => parseByteSize("lots")).toThrow();
});

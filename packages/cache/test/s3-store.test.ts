import { afterAll, beforeAll, expect, test } from "bun:test";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { startS3Server } from "../../../tests/support/s3-server.ts";
import { S3BlobStore } from "../src/fleet/s3-store.ts";
import { ProgramCache } from "../src/program-cache.ts";
import type { CacheWarning } from "../src/warnings.ts";
import { MODULES, reloadBundle, tempDir, writeBundle } from "./support/fixtures.ts";
import { BASE_IDENTITY, HashBackend, runProgram } from "./support/hash-backend.ts";

/**
 * The S3 store against a real S3-compatible server (s3rver: the S3 REST API over HTTP, objects
 * on disk). s3rver does not check request signatures, so credentials are not tested here.
 */
const tmp = tempDir("xlaserve-s3-");
let server: Awaited<ReturnType<typeof startS3Server>>;
beforeAll(async () => {
  server = await startS3Server(join(tmp.path, "s3"), "fleet");
});
afterAll(async () => {
  await server[Symbol.asyncDispose]();
  tmp[Symbol.dispose]();
});

test("objects: absent is null, put then get, delete; an unreachable server fails loudly instead of looking absent", async () => {
  const store = S3BlobStore.fromUrl("s3://fleet/some/prefix/", server.env);
  expect(store.where).toBe("s3://fleet/some/prefix");
  expect(await store.get("p/a.xprog")).toBeNull();
  const bytes = crypto.getRandomValues(new Uint8Array(300_000));
  await store.put("p/a.xprog", bytes);
  expect(await store.get("p/a.xprog")).toEqual(bytes);
  await store.delete("p/a.xprog");
  expect(await store.get("p/a.xprog")).toBeNull();
  expect(() => store.get("../escape")).toThrow(/not a blob name/);
  const down = S3BlobStore.fromUrl("s3://fleet/some/prefix", { ...server.env, S3_ENDPOINT: "http://127.0.0.1:1" });
  await expect(down.get("p/a.xprog")).rejects.toThrow();
  expect(() => S3BlobStore.fromUrl("s3://Not_A_Bucket/x")).toThrow(/not an s3:\/\/bucket\/prefix URL/);
});

test("a fleet on S3: compiled once, fetched by the next worker; a damaged object is rebuilt, never served", async () => {
  const source = writeBundle(join(tmp.path, "origin"), "m", MODULES);
  const hash = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
  let n = 0;
  const open: ProgramCache[] = [];
  async function worker() {
    const repo = join(tmp.path, `host${n++}`);
    cpSync(source.dir, join(repo, "m"), { recursive: true });
    const bundle = reloadBundle(join(repo, "m"), "m", Object.keys(MODULES));
    const warnings: CacheWarning[] = [];
    const cache = await ProgramCache.open({
      stateDir: join(tmp.path, "state"),
      dbPath: join(repo, "index.sqlite"),
      onWarning: (w) => warnings.push(w),
      fleet: { catalog: "sqlite", store: "s3://fleet/programs", env: server.env, pollMs: 10 },
    });
    open.push(cache);
    const backend = new HashBackend(BASE_IDENTITY);
    const module = bundle.modules[0]!;
    const r = await cache.getOrCompile({ bundle, module, backend, options: {} });
    return { r, output: hash(await runProgram(backend, r.executable)), warnings, compiles: backend.compiles, cache };
  }
  const a = await worker();
  const b = await worker();
  expect([a.r.from, a.compiles, b.r.from, b.compiles]).toEqual(["compile", 1, "fleet", 0]);
  expect(b.output).toBe(a.output);

  const program = (await a.cache.fleet!.catalog.programs())[0]!;
  const store = S3BlobStore.fromUrl("s3://fleet/programs", server.env);
  const damaged = (await store.get(program.blob))!;
  damaged[200]! ^= 1;
  await store.put(program.blob, damaged);
  const c = await worker();
  expect([c.r.from, c.compiles, c.output]).toEqual(["compile", 1, a.output]);
  expect(c.warnings.map((w) => w.kind)).toContain("fleet-bad-blob");
  const d = await worker();
  expect([d.r.from, d.compiles, d.output]).toEqual(["fleet", 0, a.output]);
  for (const cache of open) cache.close();
});

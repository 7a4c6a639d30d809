import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type XlaserveError, loadConfig } from "../src/index.ts";
import { validateConfig } from "../src/config/load.ts";

const dir = mkdtempSync(join(tmpdir(), "xlaserve-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function configError(run: () => unknown): XlaserveError {
  try {
    run();
  } catch (e) {
    return e as XlaserveError;
  }
  throw new Error("expected CONFIG_INVALID");
}

describe("loadConfig", () => {
  test("defaults", () => {
    const config = loadConfig({ env: {} });
    // toMatchObject: other packages may add settings of their own to the schema.
    expect(config).toMatchObject({
      engine: "auto",
      pjrt: {
        memoryFraction: 0.75,
        preallocate: false,
        deterministic: false,
        compileInChild: true,
        loadThreads: 4,
        hedgeLoads: 1,
      },
      server: { host: "127.0.0.1", port: 8000, maxBodyBytes: 64 * 1024 * 1024 },
      repository: { path: "examples/models", dynamic: true, pollIntervalMs: 2000 },
      cache: { enabled: true, stateDir: ".state", catalog: "sqlite", leaseMs: 30_000 },
      memory: { weightFraction: 0.9, wiggle: 0.1, defaultResidency: "device" },
      concurrency: { queueDepth: 64 },
      log: { level: "info", format: "auto" },
    });
    expect(config.pjrt.plugin).toBeUndefined();
    expect(config.concurrency.perModel).toBeUndefined(); // chosen by engine: see perModelDefault
    expect(config.server.authToken).toBeUndefined();
  });

  test("a YAML file overrides defaults; env overrides the file; strings are coerced", () => {
    const path = file(
      "worker.yaml",
      "engine: pjrt\nserver:\n  port: 9000\n  host: 0.0.0.0\npjrt:\n  memoryFraction: 0.5\nlog:\n  level: debug\n",
    );
    const config = loadConfig({
      file: path,
      env: {
        XLASERVE_PORT: "9100",
        XLASERVE_ENGINE: "reactant",
        XLASERVE_MODEL_REPOSITORY: "/srv/models",
        XLASERVE_PJRT_PLUGIN: "/opt/pjrt/plugin.so",
        XLASERVE_PJRT__PREALLOCATE: "true",
        XLASERVE_CONCURRENCY__QUEUE_DEPTH: "8",
        XLASERVE_CACHE__CATALOG: "postgres://db/xla",
        XLASERVE_SOME_TEST_SWITCH: "1",
        HOME: "/root",
      },
    });
    expect(config.engine).toBe("reactant");
    expect(config.server).toEqual({
      host: "0.0.0.0",
      port: 9100,
      maxBodyBytes: 64 * 1024 * 1024,
      readiness: "strict",
      reusePort: false,
      grpcPort: 8001,
      grpcMaxMessageBytes: 512 * 1024 * 1024,
    });
    expect(config.pjrt).toMatchObject({ memoryFraction: 0.5, preallocate: true, plugin: "/opt/pjrt/plugin.so" });
    expect(config.repository.path).toBe("/srv/models");
    expect(config.concurrency.queueDepth).toBe(8);
    expect(config.cache.catalog).toBe("postgres://db/xla");
    expect(config.log.level).toBe("debug");
  });

  test("JSON files work too", () => {
    const path = file("worker.json", JSON.stringify({ cache: { enabled: false }, memory: { wiggle: 0.2 } }));
    const config = loadConfig({ file: path, env: {} });
    expect(config.cache.enabled).toBe(false);
    expect(config.memory.wiggle).toBe(0.2);
  });

  test("every bad field is listed with its path, the expected type and its source", () => {
    const path = file(
      "bad.yaml",
      "engine: gpu\nserver:\n  port: 70000\n  hots: x\nmemory:\n  weightFraction: 2\nlog:\n  format: xml\ntypo: 1\n",
    );
    const error = configError(() =>
      loadConfig({ file: path, env: { XLASERVE_CONCURRENCY__PER_MODEL: "many", XLASERVE_SERVER__NOPE: "1" } }),
    );
    expect(error.code).toBe("CONFIG_INVALID");
    const problems = error.details.errors as { path: string; expected: string; source: string }[];
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p]));
    expect(Object.keys(byPath).sort()).toEqual(
      [
        "concurrency.perModel",
        "engine",
        "log.format",
        "memory.weightFraction",
        "server.hots",
        "server.nope",
        "server.port",
        "typo",
      ].sort(),
    );
    expect(byPath.engine?.expected).toBe("one of auto, pjrt, reactant");
    expect(byPath["server.port"]?.expected).toBe("an integer >= 0 and <= 65535");
    expect(byPath["memory.weightFraction"]?.expected).toBe("a number > 0 and <= 1");
    expect(byPath["concurrency.perModel"]?.source).toBe("env XLASERVE_CONCURRENCY__PER_MODEL");
    expect(byPath["server.nope"]?.source).toBe("env XLASERVE_SERVER__NOPE");
    expect(byPath["server.port"]?.source).toBe(`file ${path}`);
    for (const p of problems) expect(error.message).toContain(p.path);
  });

  for (const { key, env, fallback, max } of [
    { key: "loadThreads", env: "XLASERVE_PJRT__LOAD_THREADS", fallback: 4, max: 16 },
    { key: "hedgeLoads", env: "XLASERVE_PJRT__HEDGE_LOADS", fallback: 1, max: 15 },
  ] as const) {
    const path = `pjrt.${key}`;
    test(`${path} is an integer from 0 to ${max}, ${fallback} by default`, () => {
      const read = (e: Record<string, string>) => loadConfig({ env: e }).pjrt[key];
      expect(read({})).toBe(fallback);
      expect(read({ [env]: "0" })).toBe(0);
      expect(read({ [env]: String(max) })).toBe(max);
      for (const bad of [String(max + 1), "-1"]) {
        const error = configError(() => loadConfig({ env: { [env]: bad } }));
        expect(error.code).toBe("CONFIG_INVALID");
        const problems = error.details.errors as { path: string; expected: string }[];
        expect(problems).toMatchObject([{ path, expected: `an integer >= 0 and <= ${max}` }]);
      }
    });
  }

  test("an integer setting given a fraction or an exponent is refused, not truncated", () => {
    for (const bad of ["1.5", "1e1"]) {
      const error = configError(() => loadConfig({ env: { XLASERVE_PJRT__LOAD_THREADS: bad, XLASERVE_PORT: "80.5" } }));
      expect(error.details.errors).toEqual([
        {
          path: "pjrt.loadThreads",
          expected: "an integer >= 0 and <= 16",
          found: JSON.stringify(bad),
          source: "env XLASERVE_PJRT__LOAD_THREADS",
        },
        {
          path: "server.port",
          expected: expect.stringContaining("integer"),
          found: '"80.5"',
          source: "env XLASERVE_PORT",
        },
      ]);
    }
    const file = join(dir, "fraction.yaml");
    writeFileSync(file, "pjrt:\n  loadThreads: 2.5\n");
    expect(configError(() => loadConfig({ file, env: {} })).details.errors).toMatchObject([
      { path: "pjrt.loadThreads", found: "2.5", source: `file ${file}` },
    ]);
    // whole numbers written with spaces or a sign still count
    expect(loadConfig({ env: { XLASERVE_PJRT__LOAD_THREADS: " +3 " } }).pjrt.loadThreads).toBe(3);
  });

  test("server.httpThreads was removed: a file, the environment or an override setting it is told to use node --workers", () => {
    const file = join(dir, "threads.yaml");
    writeFileSync(file, "server:\n  httpThreads: 4\n");
    for (const [made, source] of [
      [() => loadConfig({ file, env: {} }), `file ${file}`],
      [() => loadConfig({ env: { XLASERVE_HTTP_THREADS: "2" } }), "env XLASERVE_HTTP_THREADS"],
      [() => loadConfig({ env: { XLASERVE_SERVER__HTTP_THREADS: "2" } }), "env XLASERVE_SERVER__HTTP_THREADS"],
      [() => validateConfig({ server: { httpThreads: 1 } }), "given value"],
    ] as const) {
      const err = configError(made);
      expect(err.message).toContain(`server.httpThreads (${source})`);
      expect(err.message).toContain("xlaserve node --workers N");
      expect(err.details.removed).toEqual(["server.httpThreads"]);
    }
    // Not setting it is fine, and it is gone from the parsed configuration.
    expect("httpThreads" in loadConfig({ env: {} }).server).toBe(false);
  });

  test("where programs run is configuration too: XLASERVE_ENGINE_THREAD and XLASERVE_INLINE_MAX_US", () => {
    expect(loadConfig({ env: {} }).placement).toEqual({ engineThread: true, inlineMaxUs: 50 });
    const set = loadConfig({ env: { XLASERVE_ENGINE_THREAD: "0", XLASERVE_INLINE_MAX_US: "12.5" } });
    expect(set.placement).toEqual({ engineThread: false, inlineMaxUs: 12.5 });
    const bad = configError(() =>
      loadConfig({ env: { XLASERVE_ENGINE_THREAD: "maybe", XLASERVE_INLINE_MAX_US: "-1" } }),
    );
    expect(bad.message).toContain("placement.engineThread: expected");
    expect(bad.message).toContain("(env XLASERVE_ENGINE_THREAD)");
    expect(bad.message).toContain("placement.inlineMaxUs: expected");
    expect(bad.message).toContain("(env XLASERVE_INLINE_MAX_US)");
  });

  test("unreadable files are CONFIG_INVALID", () => {
    expect(configError(() => loadConfig({ file: join(dir, "missing.yaml"), env: {} })).code).toBe("CONFIG_INVALID");
    const broken = file("broken.yaml", "server: [\n");
    expect(configError(() => loadConfig({ file: broken, env: {} })).message).toContain("cannot be parsed");
    const list = file("list.yaml", "- 1\n");
    expect(configError(() => loadConfig({ file: list, env: {} })).message).toContain("mapping");
  });

  test("an empty file means all defaults", () => {
    expect(loadConfig({ file: file("empty.yaml", ""), env: {} }).server.port).toBe(8000);
  });
});

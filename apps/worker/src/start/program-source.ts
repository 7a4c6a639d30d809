import { resolve } from "node:path";
import type { AbstractBackend, Logger } from "@xlaserve/core";
import { compileOptionsOf } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import { type ProgramCache, ProgramFleet } from "@xlaserve/cache";
import type { ProbeFigureStore } from "../memory/probe-figures.ts";
import type { LoadedProgram, ProgramSource } from "../model/program-types.ts";
import { CACHE_RETRY_MS, CacheHolder } from "./cache-holder.ts";
import { fleetOptions } from "./fleet-options.ts";

/**
 * Where the models' programs come from: the program cache (hit: deserialized; miss: compiled and
 * stored), or a compile per program when the cache is off or cannot be opened (a full disk under
 * the state directory: see CacheHolder, which keeps trying).
 */
export async function openPrograms(
  config: Config,
  backend: AbstractBackend,
  log: Logger,
  fleetOpening: Promise<ProgramFleet | null> | null = openFleet(config, log),
): Promise<{ programs: ProgramSource; cache: CacheHolder | null }> {
  const opened = await openProgramSource(config, backend, log, fleetOpening);
  return { ...opened, programs: withProgress(opened.programs, log) };
}

/**
 * How often a program that is still being compiled (or loaded) is reported: a GPU compile takes
 * minutes, and a log that says nothing meanwhile looks like a hang. XLASERVE_TEST_PROGRESS_MS
 * shortens it for tests.
 */
export const PROGRESS_MS = 5_000;

/** Logs "still compiling" per program every PROGRESS_MS until its program is there. */
function withProgress(source: ProgramSource, log: Logger): ProgramSource {
  const everyMs = Number(process.env.XLASERVE_TEST_PROGRESS_MS) || PROGRESS_MS;
  return async (bundle, module) => {
    const t0 = performance.now();
    const timer = setInterval(() => {
      const seconds = Math.round((performance.now() - t0) / 100) / 10;
      log.info(`still compiling ${bundle.name}/${module.file}: ${seconds} s`, {
        model: bundle.name,
        module: module.file,
        seconds,
      });
    }, everyMs);
    (timer as { unref?: () => void }).unref?.();
    try {
      return await source(bundle, module);
    } finally {
      clearInterval(timer);
    }
  };
}

async function openProgramSource(
  config: Config,
  backend: AbstractBackend,
  log: Logger,
  fleetOpening: Promise<ProgramFleet | null> | null,
): Promise<{ programs: ProgramSource; cache: CacheHolder | null }> {
  const options = compileOptionsOf(config);
  const slowCompile = slowCompileForTests(backend, options);
  const uncached: ProgramSource = async (_bundle, module) => {
    const t0 = performance.now();
    const executable = slowCompile
      ? await slowCompile(module)
      : await backend.compile({ bytes: await module.read(), format: module.format, origin: module.path }, options);
    return { executable, outcome: "uncached", compileMs: performance.now() - t0, loadMs: 0 };
  };
  if (!config.cache.enabled) return { programs: uncached, cache: null };
  // An unreachable fleet fails the start as before; only the local disk degrades to uncached.
  const fleet = fleetOpening ? await fleetOpening : null;
  const retryMs = Number(process.env.XLASERVE_TEST_CACHE_RETRY_MS ?? CACHE_RETRY_MS);
  const holder = new CacheHolder(
    {
      stateDir: resolve(config.cache.stateDir),
      onWarning: cacheWarnings(log),
      ...(fleet ? { fleetOpening: Promise.resolve(fleet) } : {}),
    },
    log,
    retryMs > 0 ? retryMs : CACHE_RETRY_MS,
  );
  await holder.open();
  const opened = holder.cache;
  if (opened?.fleet)
    log.info("program cache shared by the fleet", { where: opened.fleet.where, leaseMs: opened.fleet.leaseMs });
  // Each bundle's module hashes are synced once with the cache that serves it.
  const synced = new WeakMap<object, ProgramCache>();
  const programs: ProgramSource = async (bundle, module): Promise<LoadedProgram> => {
    const cache = holder.cache;
    if (!cache) return uncached(bundle, module);
    if (synced.get(bundle) !== cache) {
      synced.set(bundle, cache);
      cache.syncModuleHashes(bundle);
    }
    const r = await cache.getOrCompile({
      bundle,
      module,
      backend,
      options,
      ...(slowCompile ? { compile: () => slowCompile(module) } : {}),
    });
    return {
      executable: r.executable,
      outcome: r.outcome,
      compileMs: r.compileMs ?? 0,
      loadMs: r.loadMs ?? 0,
      entryPath: r.entryPath,
    };
  };
  return { programs, cache: holder };
}

/**
 * XLASERVE_TEST_COMPILE_DELAY_MS: every compile first waits this long, so the fleet tests can
 * kill a worker while it holds a compile lease (the CPU engine compiles the examples in
 * milliseconds; a GPU compile takes minutes). Never set outside tests.
 */
function slowCompileForTests(backend: AbstractBackend, options: ReturnType<typeof compileOptionsOf>) {
  const delayMs = Number(process.env.XLASERVE_TEST_COMPILE_DELAY_MS ?? 0);
  if (!(delayMs > 0)) return null;
  return async (module: Parameters<ProgramSource>[1]) => {
    await Bun.sleep(delayMs);
    return backend.compile({ bytes: await module.read(), format: module.format, origin: module.path }, options);
  };
}

const cacheWarnings = (log: Logger) => (w: { kind: string; message: string }) =>
  log.warn("program cache", { kind: w.kind, message: w.message });

/**
 * Starts connecting to the fleet's catalog (when cache.store is set), so the connection and the
 * catalog's schema check overlap the engine's start; openPrograms waits for it. A catalog or
 * store that cannot be opened does not stop the worker: it says so and serves with a cache of its
 * own (compiling what it lacks), so a database outage never keeps new pods from serving.
 */
export function openFleet(config: Config, log: Logger): Promise<ProgramFleet | null> | null {
  const fleet = config.cache.enabled ? fleetOptions(config) : undefined;
  if (!fleet) return null;
  return ProgramFleet.open(fleet, resolve(config.cache.stateDir), cacheWarnings(log)).catch((e: Error) => {
    log.error("fleet cache unavailable: this worker compiles and caches its programs on its own", {
      error: e.message,
      store: fleet.store,
    });
    return null;
  });
}

/** The program cache's index as the registry's store of probe figures (none while it is unavailable). */
export function probeFigureStore(holder: CacheHolder): ProbeFigureStore {
  return {
    get: (key, identity) => holder.cache?.probeFigures(key, identity) ?? null,
    put: (key, identity, f) => holder.cache?.storeProbeFigures(key, { identity, ...f, measuredAt: Date.now() }),
  };
}

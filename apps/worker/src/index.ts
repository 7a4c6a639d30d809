import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import type { AbstractBackend, Logger } from "@xlaserve/core";
import { XlaserveError, compileOptionsOf, createLogger, envWarnings } from "@xlaserve/core";
import { loadConfig, validateConfig } from "@xlaserve/core/config/load.ts";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { EngineChoice } from "@xlaserve/core/engine/select.ts";
import { ProgramCache } from "@xlaserve/cache";
import type { Metrics, RunningServer } from "@xlaserve/server";
import type { ServerInfo } from "@xlaserve/server/contract.ts";
import { quietPort } from "./http/quiet-port.ts";
import { formatBytes } from "./memory/budget.ts";
import { chooseEngine, createBackend } from "./engine/create-backend.ts";
import type { LoadedProgram, ProgramSource } from "./model/runtime-model.ts";
import type { ProbeFigureStore } from "./memory/probe-figures.ts";
import { FrontPool } from "./http-threads/front-pool.ts";
import { isInlineHost } from "./inline/inline-runs.ts";
import { ModelRegistry } from "./repository/registry.ts";
import { VerifiedWeightsMemo } from "./repository/verified-weights.ts";
import { ThreadedBackend } from "./engine-thread/threaded-backend.ts";
import type { HttpModules } from "./http/http-modules.ts";
import { StartupClock } from "./start/startup-clock.ts";
import { installStopSignals } from "./start/stop-signals.ts";
import { RepositoryWatcher } from "./repository/watcher.ts";

export { ModelRegistry } from "./repository/registry.ts";
export { RuntimeModel, type ProgramSource, type LoadedProgram, type ProbeResult } from "./model/runtime-model.ts";
export { RepositoryWatcher } from "./repository/watcher.ts";
export { WeightManager } from "./memory/weights.ts";
export { computeWeightBudget, type WeightBudget, type Residency } from "./memory/budget.ts";

export const WORKER_VERSION = "0.1.0";

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

export interface WorkerOverrides {
  /** Merged over the loaded configuration (file, then XLASERVE_* env, then these). */
  readonly config?: DeepPartial<Config>;
  /** A YAML or JSON configuration file. */
  readonly configFile?: string;
  /** Environment for XLASERVE_* settings; defaults to process.env. Pass {} in tests. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Shortcuts for config.repository.path / server.port / server.host. */
  readonly repository?: string;
  readonly port?: number;
  readonly host?: string;
  /** Use this backend instead of selecting one (tests). The worker disposes it on stop. */
  readonly backend?: AbstractBackend;
  /** Use this instead of the program cache (tests). */
  readonly programs?: ProgramSource;
  readonly logger?: Logger;
  /** Run the CPU engine on its own thread (default true) so compute never blocks the event loop. */
  readonly engineThread?: boolean;
  /**
   * Programs whose measured run takes at most this many microseconds run on the HTTP thread
   * instead of the engine thread (apps/worker/src/inline/inline-runs.ts). Default XLASERVE_INLINE_MAX_US
   * or INLINE_MAX_US_DEFAULT; 0 turns it off.
   */
  readonly inlineMaxUs?: number;
  /** Install SIGTERM/SIGINT handlers that stop the worker (the CLI does). */
  readonly handleSignals?: boolean;
}

export interface StartedWorker {
  readonly url: string;
  readonly registry: ModelRegistry;
  readonly config: Config;
  readonly engine: EngineChoice;
  readonly metrics: Metrics;
  readonly watcher: RepositoryWatcher | null;
  readonly backend: AbstractBackend;
  readonly logger: Logger;
  /** The extra HTTP threads (config server.httpThreads past 1), else null. */
  readonly fronts: FrontPool | null;
  stop(): Promise<void>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const cur = out[k];
    out[k] = isObject(cur) && isObject(v) ? merge(cur, v) : v;
  }
  return out;
}

/** Configuration: defaults < file < XLASERVE_* env < overrides. */
export function resolveWorkerConfig(overrides: WorkerOverrides = {}): Config {
  const loaded = loadConfig({ file: overrides.configFile, env: overrides.env });
  const shortcuts: Record<string, unknown> = {};
  if (overrides.repository !== undefined) shortcuts.repository = { path: overrides.repository };
  if (overrides.port !== undefined || overrides.host !== undefined) {
    shortcuts.server = { port: overrides.port, host: overrides.host };
  }
  const merged = merge(
    merge(loaded as unknown as Record<string, unknown>, (overrides.config ?? {}) as Record<string, unknown>),
    shortcuts,
  );
  return validateConfig(merged);
}

/**
 * The composition root: configuration -> engine selection -> backend -> program cache -> model
 * repository -> memory probe and budget -> watcher -> server.
 */
export async function startWorker(overrides: WorkerOverrides = {}): Promise<StartedWorker> {
  // Where the start's time goes, for the "ready" line (performance.now() counts from process start).
  const startup = new StartupClock();
  // The HTTP side (Elysia, the OpenAPI plugin, prom-client) is imported now and awaited only once
  // the models are loaded: parsing it overlaps the engine's start on its own thread.
  const http = import("./http/http-modules.ts");
  const config = resolveWorkerConfig(overrides);
  const logger = overrides.logger ?? createLogger({ level: config.log.level, format: config.log.format });
  const log = logger.child({ component: "worker" });
  for (const warning of envWarnings(overrides.env ?? process.env)) log.warn(warning);

  // Engine selection (and why).
  let engine: EngineChoice;
  let backend: AbstractBackend;
  if (overrides.backend) {
    backend = overrides.backend;
    engine = { engine: backend.name, reason: "backend supplied by the caller" };
  } else {
    engine = await chooseEngine(config, log);
    startup.lap("engineSelect");
    backend = await createBackend(engine, config, {
      engineThread: overrides.engineThread ?? process.env.XLASERVE_ENGINE_THREAD !== "0",
      log,
    });
  }
  const identity = backend.identity();
  startup.lap("engine");
  const inlineMaxUs = overrides.inlineMaxUs ?? inlineMaxUsFromEnv();
  log.info("engine selected", {
    engine: engine.engine,
    reason: engine.reason,
    device: identity.deviceKind,
    platform: identity.platform,
  });

  // Program cache.
  let cache: ProgramCache | null = null;
  let programs: ProgramSource;
  const compileOptions = compileOptionsOf(config);
  if (overrides.programs) {
    programs = overrides.programs;
  } else if (config.cache.enabled) {
    const stateDir = resolve(config.cache.stateDir);
    mkdirSync(stateDir, { recursive: true });
    const c = await ProgramCache.open({
      stateDir,
      onWarning: (w) => log.warn("program cache", { kind: w.kind, message: w.message }),
    });
    cache = c;
    const synced = new WeakSet<object>();
    programs = async (bundle, module): Promise<LoadedProgram> => {
      if (!synced.has(bundle)) {
        synced.add(bundle);
        c.syncModuleHashes(bundle);
      }
      const r = await c.getOrCompile({ bundle, module, backend, options: compileOptions });
      return {
        executable: r.executable,
        outcome: r.outcome,
        compileMs: r.compileMs ?? 0,
        loadMs: r.loadMs ?? 0,
        entryPath: r.entryPath,
      };
    };
  } else {
    programs = async (_bundle, module): Promise<LoadedProgram> => {
      const t0 = performance.now();
      const executable = await backend.compile(
        { bytes: await module.read(), format: module.format, origin: module.path },
        compileOptions,
      );
      return { executable, outcome: "uncached", compileMs: performance.now() - t0, loadMs: 0 };
    };
  }

  startup.lap("cacheOpen");

  // Metrics: the server's series plus the worker's own budget and per-model gauges.
  const {
    Metrics: MetricsClass,
    createServerApp,
    startServer,
    maxRequestBodySize,
    InferService,
    Counter,
    Gauge,
  } = await http;
  startup.lap("imports");
  const metrics = new MetricsClass();
  const extra = workerGauges(metrics, Counter, Gauge);

  let registry: ModelRegistry;
  // The extra HTTP threads, started once the server listens (config server.httpThreads).
  let fronts: FrontPool | null = null;
  const serverInfo = (): ServerInfo => ({
    name: "xlaserve",
    version: WORKER_VERSION,
    extensions: [],
    extra: {
      engine: engine.engine,
      engineReason: engine.reason,
      plugin: engine.plugin?.path ?? null,
      device: identity,
      budget: registry?.budgetExtra().budget ?? null,
      // The extra HTTP threads' figures (requests each answered itself and relayed; replicas), or null.
      httpThreads: fronts?.figures() ?? null,
    },
  });
  registry = new ModelRegistry({
    repository: config.repository.path,
    backend,
    platform: `xlaserve_${backend.name}`,
    programs,
    probeFigures: cache ? probeFigureStore(cache) : undefined,
    verifiedWeights: new VerifiedWeightsMemo(resolve(config.cache.stateDir)),
    inlineMaxUs,
    log: logger,
    memory: config.memory,
    concurrency: { ...config.concurrency, perModel: config.concurrency.perModel ?? perModelDefault(backend.name) },
    serverInfo,
    hooks: {
      queueDepth: (model, depth) => metrics.setQueueDepth(model, depth),
      computeSeconds: (model, s) => metrics.addComputeSeconds(model, s),
      weightLoad: (model, _bytes, s) => {
        metrics.weightLoads.inc({ model });
        extra.weightLoadSeconds.inc({ model }, s);
      },
      weightEvict: (model) => metrics.weightEvicts.inc({ model }),
      programLoaded: (model, p) => {
        if (p.outcome === "hit") {
          metrics.cacheHits.inc({ model });
          metrics.cacheLoads.inc({ model });
        } else if (p.outcome === "miss" || p.outcome === "recompiled") {
          metrics.cacheMisses.inc({ model });
          metrics.cacheCompiles.inc({ model });
        }
      },
    },
  });
  metrics.onScrape(() => {
    const dev = String(0);
    try {
      const m = backend.memoryStats();
      metrics.deviceMemoryInUse.set({ device: dev }, m.inUseBytes);
      metrics.deviceMemoryPeak.set({ device: dev }, m.peakBytes);
      if (m.limitBytes !== null) metrics.deviceMemoryLimit.set({ device: dev }, m.limitBytes);
    } catch {
      // a disposed backend during shutdown
    }
    const b = registry.currentBudget();
    metrics.weightCacheUsed.set({ device: dev }, registry.weights.residentOnDemandBytes);
    if (b) {
      metrics.weightCacheCapacity.set({ device: dev }, b.onDemandBytes);
      extra.budget.set({ device: dev, figure: "limit" }, b.limitBytes);
      extra.budget.set({ device: dev, figure: "pool" }, b.poolBytes);
      extra.budget.set({ device: dev, figure: "on_demand" }, b.onDemandBytes);
      extra.budget.set({ device: dev, figure: "pinned" }, b.pinnedBytes);
      extra.budget.set({ device: dev, figure: "max_scratch" }, b.maxScratchBytes);
    }
    extra.residentWeights.set({ device: dev }, registry.weights.residentBytes);
    extra.modelWeight.reset();
    extra.modelScratch.reset();
    extra.modelResident.reset();
    extra.modelPinned.reset();
    for (const m of registry.models()) {
      const e = m.extra();
      extra.modelWeight.set({ model: m.name }, m.weightBytes);
      extra.modelScratch.set({ model: m.name }, m.scratchBytes);
      extra.modelResident.set({ model: m.name }, e.resident ? 1 : 0);
      extra.modelPinned.set({ model: m.name }, m.residency === "pinned" ? 1 : 0);
    }
    extra.modelsLoaded.set(registry.models().length);
  });

  // Load every bundle (compile or load from the cache, probe, warm up), then resolve the budget.
  try {
    await registry.loadAll();
  } catch (err) {
    await registry.shutdown();
    cache?.close();
    await backend.dispose();
    throw err;
  }
  startup.lap("models");
  const b = registry.currentBudget();
  if (b) {
    log.info("memory", {
      limit: formatBytes(b.limitBytes),
      pool: formatBytes(b.poolBytes),
      onDemand: formatBytes(b.onDemandBytes),
      pinned: formatBytes(b.pinnedBytes),
      maxScratch: formatBytes(b.maxScratchBytes),
    });
  }

  // Watcher.
  let watcher: RepositoryWatcher | null = null;
  if (config.repository.dynamic) {
    watcher = new RepositoryWatcher({
      repository: registry.repository,
      intervalMs: config.repository.pollIntervalMs,
      target: registry,
      log: logger.child({ component: "watcher" }),
    });
    watcher.seed();
    watcher.start();
  }

  // Server.
  const app = createServerApp({
    registry,
    logger,
    config: {
      maxBodyBytes: config.server.maxBodyBytes,
      authToken: config.server.authToken,
      readiness: config.server.readiness,
    },
    metrics,
  });
  const frontEngine = backend instanceof ThreadedBackend && isInlineHost(backend) ? backend.backendSpec : null;
  const httpThreads = httpThreadsFor(config, log, frontEngine !== null, inlineMaxUs);
  let server: RunningServer;
  let bound: RunningServer | null = null;
  try {
    // SO_REUSEPORT would let this bind share a port another server holds: check it is free first.
    if (httpThreads > 1 && config.server.port !== 0) assertPortFree(config.server.host, config.server.port);
    server = startServer(app, { host: config.server.host, port: config.server.port, reusePort: httpThreads > 1 });
    bound = server;
    if (httpThreads > 1 && frontEngine) {
      // What the other threads relay: infer requests straight to an infer service (as this
      // thread's own route table does), the rest through the app.
      const relayedInfer = new InferService({ registry, metrics, logger, maxBodyBytes: config.server.maxBodyBytes });
      fronts = await FrontPool.start({
        threads: httpThreads - 1,
        host: config.server.host,
        port: server.port,
        maxBodyBytes: config.server.maxBodyBytes,
        maxRequestBodySize: maxRequestBodySize(config.server.maxBodyBytes),
        backend: frontEngine,
        handle: (request, infer) =>
          infer ? relayedInfer.handle(request, infer.model, infer.version) : app.handle(request),
        metrics,
        addStats: (name, generation, stats) => registry.addReplicaStats(name, generation, stats),
        logger,
      });
      registry.attachReplicaHost(fronts);
      logger.info("HTTP threads", { threads: httpThreads });
    }
  } catch (err) {
    await bound?.stop(true);
    await watcher?.stop();
    await registry.shutdown();
    cache?.close();
    await backend.dispose();
    throw err;
  }
  startup.lap("server");
  log.info("listening", { url: server.url, models: registry.loadedNames() });
  log.info(`ready in ${Math.round(startup.totalMs())} ms`, {
    ms: Math.round(startup.totalMs()),
    phases: startup.phases(),
  });
  // Models whose stored probe figures spared their probe run once now, beside the first requests.
  void registry.warmUpPending();

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    if (stopping) return stopping;
    stopping = (async () => {
      log.info("stopping: draining requests");
      await watcher?.stop();
      // The other HTTP threads stop accepting first; what they relay meanwhile is still answered here.
      await fronts?.stop();
      registry.attachReplicaHost(null);
      const draining = registry.shutdown(); // refuses new work, waits for in-flight requests
      await draining;
      await quietPort(server);
      await server.stop();
      cache?.close();
      await backend.dispose();
      log.info("stopped");
    })();
    return stopping;
  };

  if (overrides.handleSignals) installStopSignals(stop, log);

  return { url: server.url, registry, config, engine, metrics, watcher, backend, logger, fronts, stop };
}

/**
 * The HTTP threads to run. Extra threads pay off only through the models they run themselves,
 * and everything else they relay costs more than it would on the main thread: where they could
 * run nothing (PJRT, the engine kept on the main thread, inline runs off, dynamic batching),
 * the worker serves on one thread and says why. SO_REUSEPORT spreads connections over sockets
 * on Linux only (elsewhere the last socket bound tends to get them all).
 */
function httpThreadsFor(config: Config, log: Logger, engineCanRunThere: boolean, inlineMaxUs: number): number {
  const asked = config.server.httpThreads;
  if (asked <= 1) return asked;
  const why =
    process.platform !== "linux"
      ? `SO_REUSEPORT spreads connections on Linux only (this is ${process.platform})`
      : !engineCanRunThere
        ? "the engine cannot run models on other threads (PJRT, or the engine on the main thread)"
        : inlineMaxUs <= 0
          ? "inline runs are off (XLASERVE_INLINE_MAX_US=0), so no model would run on them"
          : config.concurrency.dynamicBatching
            ? "dynamic batching keeps every run on the engine thread"
            : null;
  if (why === null) return asked;
  log.warn(`server.httpThreads is ${asked}, but the worker serves on one thread: ${why}`, { asked });
  return 1;
}

/** Throws a clear error when something already listens on host:port. */
function assertPortFree(host: string, port: number): void {
  try {
    Bun.serve({ hostname: host, port, fetch: () => new Response(null, { status: 503 }) }).stop(true);
  } catch (err) {
    throw new XlaserveError("CONFIG_INVALID", `cannot listen on ${host}:${port}: ${(err as Error).message}`);
  }
}

/**
 * The inline threshold: 50 us blocks the event loop for about as long as a request's own HTTP
 * work, so a request never waits behind a run for much longer than behind another request.
 */
export const INLINE_MAX_US_DEFAULT = 50;

function inlineMaxUsFromEnv(): number {
  const raw = process.env.XLASERVE_INLINE_MAX_US;
  const n = raw === undefined || raw === "" ? Number.NaN : Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : INLINE_MAX_US_DEFAULT;
}

/**
 * Requests admitted at once per model when the configuration leaves it unset. The CPU engine's
 * thread runs one program at a time, so admitted requests only wait in its message queue, where
 * they travel together (one message and one thread wake-up for several); measured with wrk and 16
 * connections on the MLP, 16 instead of 4 took the HTTP thread from about 60 to 40-50 us per
 * request. On PJRT each admitted execution can hold its own device scratch, which the budget
 * counts once per model: 4 keeps that overlap small.
 */
export function perModelDefault(engine: string): number {
  return engine === "reactant" ? 16 : 4;
}

/** The program cache's index as the registry's store of probe figures. */
function probeFigureStore(cache: ProgramCache): ProbeFigureStore {
  return {
    get: (key, identity) => cache.probeFigures(key, identity),
    put: (key, identity, f) => cache.storeProbeFigures(key, { identity, ...f, measuredAt: Date.now() }),
  };
}

function workerGauges(metrics: Metrics, Counter: HttpModules["Counter"], Gauge: HttpModules["Gauge"]) {
  const registers = [metrics.registry];
  // Most figures are one gauge series per model.
  const perModel = (name: string, help: string) => new Gauge({ name, help, labelNames: ["model"] as const, registers });
  return {
    budget: new Gauge({
      name: "worker_weight_budget_bytes",
      help: "The resolved weight budget: limit, pool, on_demand, pinned, max_scratch",
      labelNames: ["device", "figure"] as const,
      registers,
    }),
    residentWeights: new Gauge({
      name: "worker_resident_weight_bytes",
      help: "Weight bytes resident on the device (pinned and on-demand)",
      labelNames: ["device"] as const,
      registers,
    }),
    modelWeight: perModel("worker_model_weight_bytes", "Per-model weight footprint (bytes)"),
    modelScratch: perModel("worker_model_scratch_bytes", "Per-model run scratch measured by the memory probe (bytes)"),
    modelResident: perModel("worker_model_resident", "1 if the model's weights are device-resident, else 0"),
    modelPinned: perModel("worker_model_pinned", "1 if the model is pinned, else 0"),
    modelsLoaded: new Gauge({ name: "worker_models_loaded", help: "Number of loaded models", registers }),
    weightLoadSeconds: new Counter({
      name: "worker_weight_load_seconds_total",
      help: "Cumulative time spent loading weights to the device (seconds)",
      labelNames: ["model"] as const,
      registers,
    }),
  };
}

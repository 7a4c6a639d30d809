import { resolve } from "node:path";
import type { AbstractBackend, Logger } from "@xlaserve/core";
import { createLogger, envWarnings } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { EngineChoice } from "@xlaserve/core/engine/select.ts";
import type { Metrics, RunningServer } from "@xlaserve/server";
import { grpcPortFor } from "./http/grpc.ts";
import { assertPortFree } from "./start/port-free.ts";
import type { ServerInfo } from "@xlaserve/server/contract.ts";
import { chooseEngine, createBackend } from "./engine/create-backend.ts";
import { quietPort } from "./http/quiet-port.ts";
import { formatBytes } from "./memory/budget.ts";
import { ModelRegistry } from "./repository/registry.ts";
import { VerifiedWeightsMemo } from "./repository/verified-weights.ts";
import { RepositoryWatcher } from "./repository/watcher.ts";
import { openFleet, openPrograms, probeFigureStore } from "./start/program-source.ts";
import { registryHooks } from "./start/registry-hooks.ts";
import { type Serving, serve } from "./start/serve.ts";
import { registerDeviceMemorySeries } from "./start/device-memory-series.ts";
import { registerReactantServerSeries } from "./start/reactant-server-series.ts";
import { StartupClock } from "./start/startup-clock.ts";
import { installStopSignals } from "./start/stop-signals.ts";
import { type WorkerOverrides, perModelDefault, resolveWorkerConfig } from "./start/worker-config.ts";
import { scrapeWorkerFigures, workerGauges } from "./start/worker-gauges.ts";

export { ModelRegistry } from "./repository/registry.ts";
export { RuntimeModel } from "./model/runtime-model.ts";
export type { ProgramSource, LoadedProgram } from "./model/program-types.ts";
export type { ProbeResult } from "./model/probe.ts";
export { RepositoryWatcher } from "./repository/watcher.ts";
export { WeightManager } from "./memory/weights.ts";
export { computeWeightBudget, type WeightBudget, type Residency } from "./memory/budget.ts";
export { type WorkerOverrides, perModelDefault, resolveWorkerConfig } from "./start/worker-config.ts";

export const WORKER_VERSION = "0.1.0";

export interface StartedWorker {
  readonly url: string;
  /** host:port of the gRPC service, or null when server.grpcPort is 0. */
  readonly grpcAddress: string | null;
  readonly registry: ModelRegistry;
  readonly config: Config;
  readonly engine: EngineChoice;
  readonly metrics: Metrics;
  readonly watcher: RepositoryWatcher | null;
  readonly backend: AbstractBackend;
  readonly logger: Logger;
  stop(): Promise<void>;
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
  const httpModules = import("./http/http-modules.ts");
  const config = resolveWorkerConfig(overrides);
  const logger = overrides.logger ?? createLogger({ level: config.log.level, format: config.log.format });
  const log = logger.child({ component: "worker" });
  for (const warning of envWarnings(overrides.env ?? process.env)) log.warn(warning);
  // A busy port is found now, not after every model has compiled and loaded (a port shared on
  // purpose, server.reusePort for the node's CPU workers, is busy by design).
  if (config.server.port !== 0 && !config.server.reusePort) assertPortFree(config.server.host, config.server.port);
  const grpcPort = grpcPortFor(config, overrides);
  if (grpcPort) assertPortFree(config.server.host, grpcPort, "the gRPC port, server.grpcPort");

  // The fleet's catalog connection opens while the engine starts.
  const fleetOpening = overrides.programs ? null : openFleet(config, log);

  // Engine selection (and why).
  let engine: EngineChoice;
  let backend: AbstractBackend;
  if (overrides.backend) {
    backend = overrides.backend;
    engine = { engine: backend.name, reason: "backend supplied by the caller" };
  } else {
    engine = await chooseEngine(config, log);
    startup.lap("engineSelect");
    backend = await createBackend(engine, config, { engineThread: config.placement.engineThread, log });
  }
  const identity = backend.identity();
  startup.lap("engine");
  log.info("engine selected", {
    engine: engine.engine,
    reason: engine.reason,
    device: identity.deviceKind,
    platform: identity.platform,
  });

  const { programs, cache } = overrides.programs
    ? { programs: overrides.programs, cache: null }
    : await openPrograms(config, backend, log, fleetOpening);
  startup.lap("cacheOpen");

  const http = await httpModules;
  startup.lap("imports");
  const metrics = new http.Metrics();
  const extra = workerGauges(metrics, http.Counter, http.Gauge);

  const serverInfo = (): ServerInfo => ({
    name: "xlaserve",
    version: WORKER_VERSION,
    extensions: [],
    extra: {
      engine: engine.engine,
      engineReason: engine.reason,
      plugin: engine.plugin?.path ?? null,
      device: identity,
      budget: registry.budgetExtra().budget ?? null,
    },
  });
  const registry: ModelRegistry = new ModelRegistry({
    repository: config.repository.path,
    backend,
    platform: `xlaserve_${backend.name}`,
    programs,
    probeFigures: cache ? probeFigureStore(cache) : undefined,
    verifiedWeights: new VerifiedWeightsMemo(resolve(config.cache.stateDir)),
    followLinksOutside: config.repository.followLinksOutside,
    inlineMaxUs: config.placement.inlineMaxUs,
    log: logger,
    memory: config.memory,
    concurrency: { ...config.concurrency, perModel: config.concurrency.perModel ?? perModelDefault(backend) },
    scheduling: config.scheduler,
    measureBatchInvariance: true,
    serverInfo,
    hooks: registryHooks(metrics, extra),
  });
  metrics.onScrape(() =>
    scrapeWorkerFigures(metrics, extra, registry, cache?.cache?.fleet?.counters ?? null, cache, backend),
  );
  let listening: RunningServer | null = null;
  let grpcCalls: (() => number) | null = null;
  registerDeviceMemorySeries(metrics, http.Gauge, { registry, backend, log });
  registerReactantServerSeries(metrics, http.Gauge, {
    registry,
    config,
    pendingRequests: () => (listening?.pendingRequests ?? 0) + (grpcCalls?.() ?? 0),
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

  let server: RunningServer;
  let serving: Serving;
  try {
    serving = await serve(http, {
      config,
      registry,
      metrics,
      logger,
      grpcPort,
    });
    ({ server } = serving);
    listening = server;
    grpcCalls = serving.grpc?.inFlight ?? null;
  } catch (err) {
    await watcher?.stop();
    await registry.shutdown();
    cache?.close();
    await backend.dispose();
    throw err;
  }
  startup.lap("server");
  const { grpc, sharedMemory } = serving;
  log.info("listening", { url: server.url, grpc: grpc?.address ?? null, models: registry.loadedNames() });
  log.info(`ready in ${Math.round(startup.totalMs())} ms`, {
    ms: Math.round(startup.totalMs()),
    detail: { phases: startup.phases() },
  });
  // Models whose stored probe figures spared their probe run once now, beside the first requests.
  void registry.warmUpPending();

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      log.info("stopping: draining requests");
      await watcher?.stop();
      await registry.shutdown(); // refuses new work, waits for in-flight requests
      await quietPort(server);
      // Streams still open get a moment to end, then are cancelled.
      await grpc?.stop(false, 2000);
      await server.stop();
      sharedMemory.close();
      cache?.close();
      await backend.dispose();
      log.info("stopped");
    })();
    return stopping;
  };

  if (overrides.handleSignals) installStopSignals(stop, log);

  return {
    url: server.url,
    grpcAddress: grpc?.address ?? null,
    registry,
    config,
    engine,
    metrics,
    watcher,
    backend,
    logger,
    stop,
  };
}

import type { AbstractBackend, Logger } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { Metrics, RunningGrpcServer, RunningServer, SharedMemoryRegistry } from "@xlaserve/server";
import { startWorkerGrpc } from "../http/grpc.ts";
import type { HttpModules } from "../http/http-modules.ts";
import { FrontPool } from "../http-threads/front-pool.ts";
import type { ModelRegistry } from "../repository/registry.ts";
import { assertPortFree, httpThreadsFor } from "./http-threads.ts";

export interface Serving {
  readonly server: RunningServer;
  readonly fronts: FrontPool | null;
  readonly grpc: RunningGrpcServer | null;
  /** The system shared-memory regions, one set for REST and gRPC. */
  readonly sharedMemory: SharedMemoryRegistry;
}

/**
 * The HTTP server on the configured port, the extra HTTP threads beside it where they can run
 * models themselves (server.httpThreads), and the gRPC service on `grpcPort` (null: off). On
 * failure nothing is left listening.
 */
export async function serve(
  http: HttpModules,
  o: {
    config: Config;
    registry: ModelRegistry;
    metrics: Metrics;
    logger: Logger;
    backend: AbstractBackend;
    grpcPort: number | null;
  },
): Promise<Serving> {
  const { config, registry, metrics, logger } = o;
  const sharedMemory = new http.SharedMemoryRegistry();
  const { server, fronts } = await serveHttp(http, o, sharedMemory);
  if (o.grpcPort === null) return { server, fronts, grpc: null, sharedMemory };
  try {
    const grpc = await startWorkerGrpc(http, config, o.grpcPort, { registry, logger, metrics, sharedMemory });
    return { server, fronts, grpc, sharedMemory };
  } catch (err) {
    await fronts?.stop();
    await server.stop(true);
    throw err;
  }
}

async function serveHttp(
  http: HttpModules,
  o: { config: Config; registry: ModelRegistry; metrics: Metrics; logger: Logger; backend: AbstractBackend },
  sharedMemory: SharedMemoryRegistry,
): Promise<{ server: RunningServer; fronts: FrontPool | null }> {
  const { config, registry, metrics, logger, backend } = o;
  const app = http.createServerApp({
    registry,
    logger,
    sharedMemory,
    config: {
      maxBodyBytes: config.server.maxBodyBytes,
      authToken: config.server.authToken,
      readiness: config.server.readiness,
    },
    metrics,
  });
  const httpThreads = httpThreadsFor(config, logger.child({ component: "worker" }), backend);
  // SO_REUSEPORT would let this bind share a port another server holds: check it is free first,
  // unless sharing it is the point (server.reusePort: the node's CPU workers, one port).
  const { reusePort } = config.server;
  if (httpThreads > 1 && !reusePort && config.server.port !== 0) assertPortFree(config.server.host, config.server.port);
  const server = http.startServer(app, {
    host: config.server.host,
    port: config.server.port,
    reusePort: httpThreads > 1 || reusePort,
  });
  const spec = backend.spawnSpec;
  if (httpThreads <= 1 || !spec) return { server, fronts: null };
  try {
    // What the other threads relay: infer requests straight to an infer service (as this
    // thread's own route table does), the rest through the app.
    const relayedInfer = new http.InferService({
      registry,
      metrics,
      logger,
      maxBodyBytes: config.server.maxBodyBytes,
      sharedMemory,
    });
    const fronts = await FrontPool.start({
      threads: httpThreads - 1,
      host: config.server.host,
      port: server.port,
      maxBodyBytes: config.server.maxBodyBytes,
      maxRequestBodySize: http.maxRequestBodySize(config.server.maxBodyBytes),
      backend: spec,
      handle: (request, infer) =>
        infer ? relayedInfer.handle(request, infer.model, infer.version) : app.handle(request),
      metrics,
      addStats: (name, generation, stats) => registry.addReplicaStats(name, generation, stats),
      logger,
    });
    registry.attachReplicaHost(fronts);
    logger.info("HTTP threads", { threads: httpThreads });
    return { server, fronts };
  } catch (err) {
    await server.stop(true);
    throw err;
  }
}

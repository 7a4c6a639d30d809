import type { Logger } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { Metrics, RunningGrpcServer, RunningServer, SharedMemoryRegistry } from "@xlaserve/server";
import { startWorkerGrpc } from "../http/grpc.ts";
import type { HttpModules } from "../http/http-modules.ts";
import type { ModelRegistry } from "../repository/registry.ts";

export interface Serving {
  readonly server: RunningServer;
  readonly grpc: RunningGrpcServer | null;
  /** The system shared-memory regions, one set for REST and gRPC. */
  readonly sharedMemory: SharedMemoryRegistry;
}

/**
 * The HTTP server on the configured port (sharing it with SO_REUSEPORT where server.reusePort
 * says so: the node's CPU workers, one port) and the gRPC service on `grpcPort` (null: off). On
 * failure nothing is left listening.
 */
export async function serve(
  http: HttpModules,
  o: {
    config: Config;
    registry: ModelRegistry;
    metrics: Metrics;
    logger: Logger;
    grpcPort: number | null;
  },
): Promise<Serving> {
  const { config, registry, metrics, logger } = o;
  const sharedMemory = new http.SharedMemoryRegistry();
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
  const server = http.startServer(app, {
    host: config.server.host,
    port: config.server.port,
    reusePort: config.server.reusePort,
  });
  if (o.grpcPort === null) return { server, grpc: null, sharedMemory };
  try {
    const grpc = await startWorkerGrpc(http, config, o.grpcPort, { registry, logger, metrics, sharedMemory });
    return { server, grpc, sharedMemory };
  } catch (err) {
    await server.stop(true);
    throw err;
  }
}

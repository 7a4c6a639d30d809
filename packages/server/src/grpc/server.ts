import type { Logger } from "@xlaserve/core";
import type { ModelRegistryView } from "../contract.ts";
import type { ReadinessMode } from "../health/readiness.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { InferService, type RequestCounter } from "../infer/service.ts";
import type { SharedMemoryRegistry } from "../shared-memory/registry.ts";
import { serviceDefinition } from "./definition.ts";
import { GRPCInferenceService } from "./gen/grpc_service_pb.ts";
import { modelInferHandler, modelStreamInferHandler } from "./handlers/infer.ts";
import { repositoryHandlers } from "./handlers/repository.ts";
import { serverInfoHandlers } from "./handlers/server-info.ts";
import { sharedMemoryHandlers } from "./handlers/shared-memory.ts";
import type { StreamHandler, UnaryHandler } from "./transport/calls.ts";
import { H2GrpcServer, type Route } from "./transport/h2-server.ts";

/** ReactantServer's limit for one gRPC message, either way. */
export const DEFAULT_GRPC_MAX_MESSAGE_BYTES = 512 * 1024 * 1024;

export interface GrpcTls {
  /** PEM certificate chain and private key of the server. */
  readonly cert: string | Uint8Array;
  readonly key: string | Uint8Array;
  /** PEM CA certificates to check client certificates against (mutual TLS); none: any client. */
  readonly ca?: string | Uint8Array;
}

export interface GrpcServerOptions {
  readonly registry: ModelRegistryView;
  readonly logger: Logger;
  readonly metrics: RequestCounter & Partial<Pick<Metrics, "requestBook">>;
  /** The same registry as the REST app's, so a region registered over one is seen by the other. */
  readonly sharedMemory: SharedMemoryRegistry;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Largest message received or sent (default 512 MiB). */
  readonly maxMessageBytes?: number;
  /** Bearer token for RepositoryModelLoad / Unload (the `authorization` metadata). */
  readonly authToken?: string;
  /** Serve TLS instead of cleartext HTTP/2 (h2c). */
  readonly tls?: GrpcTls;
  /** ServerReady's rule, as REST's /v2/health/ready (default strict). */
  readonly readiness?: ReadinessMode;
}

export interface RunningGrpcServer {
  readonly port: number;
  /** Calls being answered now (a stream counts until it ends). */
  readonly inFlight: () => number;
  /** host:port of the bound socket (the real port when 0 was asked for). */
  readonly address: string;
  /**
   * Stops accepting calls and lets running ones finish, cancelling what still runs after
   * `graceMs` (an open ModelStreamInfer stream would otherwise keep it up); `force` cancels at once.
   */
  stop(force?: boolean, graceMs?: number): Promise<void>;
}

/** Each method's path with its handler, by the service definition's paths and serializers. */
function routesOf(handlers: Record<string, UnaryHandler | StreamHandler>): Map<string, Route> {
  const routes = new Map<string, Route>();
  for (const [name, method] of Object.entries(serviceDefinition(GRPCInferenceService))) {
    const handler = handlers[name];
    if (!handler) continue;
    routes.set(
      method.path,
      method.requestStream
        ? { kind: "stream", handler: handler as StreamHandler }
        : { kind: "unary", handler: handler as UnaryHandler, serialize: (v) => method.responseSerialize(v) },
    );
  }
  return routes;
}

/**
 * inference.GRPCInferenceService on its own port, over node:http2 (which Bun implements; Bun.serve
 * cannot send the trailers gRPC ends each call with) through the small gRPC transport in
 * ./transport. Every RPC answers from the same service code as the REST routes.
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const max = options.maxMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
  const { registry, logger, metrics, sharedMemory } = options;
  const infer = new InferService({ registry, logger, metrics, maxBodyBytes: max, sharedMemory });
  const server = new H2GrpcServer(
    routesOf({
      ...serverInfoHandlers(registry, metrics.requestBook, options.readiness),
      ...repositoryHandlers(registry, options.authToken, logger),
      ...sharedMemoryHandlers(sharedMemory),
      ModelInfer: modelInferHandler(infer),
      ModelStreamInfer: modelStreamInferHandler(infer),
    }),
    { maxMessageBytes: max, ...(options.tls ? { tls: options.tls } : {}) },
  );
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const port = await server.listen(options.host, options.port).catch((error: Error) => {
    throw new Error(`the gRPC server could not bind ${host}:${options.port}: ${error.message}`);
  });
  return {
    port,
    address: `${host}:${port}`,
    inFlight: () => server.inFlight,
    stop: (force = false, graceMs = 2000) => server.stop(force, graceMs),
  };
}

import { readFileSync } from "node:fs";
import type { Logger } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { GrpcTls, Metrics, RunningGrpcServer, SharedMemoryRegistry } from "@xlaserve/server";
import type { ModelRegistryView } from "@xlaserve/server/contract.ts";
import type { HttpModules } from "./http-modules.ts";

/**
 * The gRPC port to bind: null when server.grpcPort is 0 (off); a free port (0) when the worker
 * was asked for a free REST port and given no gRPC port, so tests and benchmarks that start
 * workers side by side never collide on 8001.
 */
export function grpcPortFor(config: Config, overrides: { port?: number; grpcPort?: number }): number | null {
  if (config.server.grpcPort === 0) return null;
  if (overrides.port === 0 && overrides.grpcPort === undefined) return 0;
  return config.server.grpcPort;
}

function tlsOf(config: Config): GrpcTls | undefined {
  const { grpcTlsCert: cert, grpcTlsKey: key, grpcTlsCa: ca } = config.server;
  if (cert === undefined && key === undefined) {
    if (ca !== undefined)
      throw new XlaserveError("CONFIG_INVALID", "server.grpcTlsCa needs server.grpcTlsCert and grpcTlsKey");
    return undefined;
  }
  if (cert === undefined || key === undefined) {
    throw new XlaserveError("CONFIG_INVALID", "server.grpcTlsCert and server.grpcTlsKey go together (TLS needs both)");
  }
  const read = (setting: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new XlaserveError("CONFIG_INVALID", `server.${setting}: cannot read ${path}: ${(error as Error).message}`);
    }
  };
  return {
    cert: read("grpcTlsCert", cert),
    key: read("grpcTlsKey", key),
    ...(ca !== undefined ? { ca: read("grpcTlsCa", ca) } : {}),
  };
}

/**
 * Starts the gRPC service beside the REST API, on the same registry, metrics and shared-memory
 * regions. A port taken since the check at start is one clear error, as a busy REST port is.
 */
export async function startWorkerGrpc(
  http: HttpModules,
  config: Config,
  port: number,
  parts: { registry: ModelRegistryView; logger: Logger; metrics: Metrics; sharedMemory: SharedMemoryRegistry },
): Promise<RunningGrpcServer> {
  const tls = tlsOf(config);
  try {
    return await http.startGrpcServer({
      ...parts,
      host: config.server.host,
      port,
      maxMessageBytes: config.server.grpcMaxMessageBytes,
      authToken: config.server.authToken,
      readiness: config.server.readiness,
      tls,
    });
  } catch (err) {
    throw new XlaserveError("CONFIG_INVALID", `${(err as Error).message} (the gRPC port, server.grpcPort)`);
  }
}

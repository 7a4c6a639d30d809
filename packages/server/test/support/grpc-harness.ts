import type { ServiceError } from "@grpc/grpc-js";
import type { ReadinessMode } from "../../src/health/readiness.ts";
import { InferenceClient } from "../../src/grpc/client.ts";
import { type GrpcTls, startGrpcServer } from "../../src/grpc/server.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { SharedMemoryRegistry } from "../../src/shared-memory/registry.ts";
import { startHarness } from "./harness.ts";
import type { TestRegistry } from "./test-registry.ts";

export interface GrpcHarness {
  readonly url: string;
  readonly address: string;
  readonly client: InferenceClient;
  readonly registry: TestRegistry;
  readonly metrics: Metrics;
  readonly sharedMemory: SharedMemoryRegistry;
  readonly logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** The REST app and the gRPC service over one test registry and one shared-memory registry. */
export async function startGrpcHarness(
  options: {
    authToken?: string;
    maxMessageBytes?: number;
    tls?: GrpcTls;
    readiness?: ReadinessMode;
    /** The registry to serve (default: a new TestRegistry). */
    registry?: TestRegistry;
  } = {},
): Promise<GrpcHarness> {
  const sharedMemory = new SharedMemoryRegistry();
  const http = startHarness({ ...options, maxBodyBytes: 1024 * 1024, sharedMemory });
  const { registry, metrics, logs, logger } = http;
  const grpc = await startGrpcServer({
    registry,
    logger,
    metrics,
    sharedMemory,
    host: "127.0.0.1",
    port: 0,
    authToken: options.authToken,
    maxMessageBytes: options.maxMessageBytes,
    tls: options.tls,
    readiness: options.readiness,
  });
  const client = new InferenceClient(grpc.address);
  return {
    url: http.url,
    address: grpc.address,
    client,
    registry,
    metrics,
    sharedMemory,
    logs,
    stop: async () => {
      client.close();
      await grpc.stop(true);
      await http.stop();
      sharedMemory.close();
    },
  };
}

/** The error a call ended with (it must fail). */
export async function refused(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error("the call succeeded");
}

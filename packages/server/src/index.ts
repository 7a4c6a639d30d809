export { createServerApp, maxRequestBodySize, type ServerApp } from "./app.ts";
export { startServer, type ListenOptions, type RunningServer } from "./start.ts";
export { DEFAULT_MAX_BODY_BYTES, type ServerAppOptions, type ServerConfig } from "./config.ts";
export { Metrics } from "./metrics/metrics.ts";
export { statusForCode, HttpError } from "./http-error.ts";
export { SERVER_EXTENSIONS } from "./metadata/service.ts";
export type * from "./contract.ts";
export { InferService, type RequestCounter } from "./infer/service.ts";
export {
  startGrpcServer,
  DEFAULT_GRPC_MAX_MESSAGE_BYTES,
  type GrpcServerOptions,
  type GrpcTls,
  type RunningGrpcServer,
} from "./grpc/server.ts";
export { InferenceClient } from "./grpc/client.ts";
export { SharedMemoryRegistry, isSameIpcNamespace } from "./shared-memory/registry.ts";

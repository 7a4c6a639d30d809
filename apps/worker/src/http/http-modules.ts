/**
 * What the worker needs from the HTTP side, in one module so startWorker can import it lazily
 * (see index.ts: the import overlaps the engine's start).
 */
export {
  InferService,
  Metrics,
  SharedMemoryRegistry,
  createServerApp,
  maxRequestBodySize,
  startGrpcServer,
  startServer,
} from "@xlaserve/server";
export { Counter, Gauge } from "prom-client";
export type HttpModules = typeof import("./http-modules.ts");

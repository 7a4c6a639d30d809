import type { Logger } from "@xlaserve/core";
import type { ModelRegistryView } from "./contract.ts";
import type { ReadinessMode } from "./health/readiness.ts";
import type { Metrics } from "./metrics/metrics.ts";
import type { SharedMemoryRegistry } from "./shared-memory/registry.ts";

/** The HTTP layer's own settings; the worker fills them from its configuration. */
export interface ServerConfig {
  /** Largest request body accepted (JSON header plus binary tensors), in bytes. */
  readonly maxBodyBytes: number;
  /**
   * Bearer token for the repository extension's load/unload. Without one, load and unload are
   * refused: they change what the worker serves, so they are never open by default.
   */
  readonly authToken?: string;
  /**
   * strict (the default, Triton's strict readiness): ready only while every model that should
   * serve does; lenient: while at least one does. Never ready with nothing to serve.
   */
  readonly readiness?: ReadinessMode;
}

export interface ServerAppOptions {
  readonly registry: ModelRegistryView;
  readonly logger: Logger;
  readonly config: ServerConfig;
  readonly metrics: Metrics;
  /** The registered shared-memory regions, shared with the gRPC service; a new one when absent. */
  readonly sharedMemory?: SharedMemoryRegistry;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

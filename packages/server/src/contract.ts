import type { HostTensor, TensorSpec } from "@xlaserve/core";

/**
 * What the HTTP layer needs from the worker. The server package defines it and knows nothing
 * else of the runtime; apps/worker implements it over the backends, the cache and the model
 * repository. Errors are XlaserveError values: the server maps their codes to HTTP statuses
 * (INVALID_ARGUMENT 400, NOT_FOUND 404, UNAVAILABLE 503, QUEUE_FULL 429, UNAUTHORIZED 401,
 * SHUTTING_DOWN 503, OUT_OF_MEMORY 507 per Triton's mapping, anything else 500).
 */
export interface ModelRegistryView {
  serverInfo(): ServerInfo;
  /** The process is up and serving HTTP. */
  isLive(): boolean;
  /** Every model that should be loaded is ready (and the worker is not draining). */
  isReady(): boolean;
  /** Every bundle of the repository, loaded or not, with its state (repository extension). */
  repositoryIndex(): RepositoryEntry[];
  /** A model by name and optional version; undefined when there is no such model/version. */
  getModel(name: string, version?: string): ServedModel | undefined;
  /** Loads (or reloads) a bundle of the repository by name. */
  load(name: string): Promise<void>;
  /** Unloads a model after draining its in-flight requests. */
  unload(name: string): Promise<void>;
  /**
   * The worker is shutting down: a model it no longer serves is refused with 503 (try another
   * worker) rather than 404 (no such model anywhere).
   */
  isShuttingDown?(): boolean;
}

export interface ServerInfo {
  readonly name: string;
  readonly version: string;
  readonly extensions: readonly string[];
  /** Engine selected (and why), PJRT plugin and device: the "xlaserve" extra field of /v2. */
  readonly extra: Readonly<Record<string, unknown>>;
}

export type ModelState = "READY" | "LOADING" | "UNLOADING" | "UNAVAILABLE";

export interface RepositoryEntry {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  /** Why the model is not READY (a load error, a budget refusal), or "". */
  readonly reason: string;
  /** Memory figures (weight bytes, scratch, residency, resident, budget): the "xlaserve" extra field. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface ServedModel {
  readonly name: string;
  readonly version: string;
  /** "xlaserve_pjrt" or "xlaserve_reactant". */
  readonly platform: string;
  ready(): boolean;
  /** Client-facing specs (row-major shapes; batch axis marked by `batchAxis`). */
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly compiledBatchSizes: readonly number[];
  /** Largest batch a request may carry (the largest compiled size). */
  readonly maxBatchSize: number;
  /** Memory figures, residency, cache state...: the metadata's "xlaserve" extra field. */
  extra(): Record<string, unknown>;
  /**
   * Runs one request. Inputs were already validated against `inputs` by the server (names,
   * dtypes, shapes, element counts); the batch may be any size up to `maxBatchSize` (the model
   * pads up to the next compiled size and strips the padding). Returns every output, keyed by name.
   */
  infer(request: InferRequest): Promise<Map<string, HostTensor>>;
  /**
   * Throws the refusal (QUEUE_FULL) a request would get at its queue now, before the service reads
   * and decodes it: under a flood, a refused request then costs no body read, no decode and no
   * copy on the thread every other model's requests come through.
   */
  admit?(): void;
  stats(): ModelStats;
  /** Recent queue waits' median and 99th percentile in seconds (worker_queue_wait_seconds). */
  queueWaitQuantiles?(): { readonly p50: number; readonly p99: number };
}

/**
 * Whether the client has given a request up: only ever read, when a queued run is about to be
 * taken (an AbortSignal is one; gRPC passes a view of its call's own flag instead, which costs
 * no controller and no listener per request).
 */
export interface CancelFlag {
  readonly aborted: boolean;
}

export interface InferRequest {
  readonly id?: string;
  readonly inputs: ReadonlyMap<string, HostTensor>;
  readonly signal?: CancelFlag;
  /**
   * performance.now() past which the request is dropped before it runs (DEADLINE_EXCEEDED):
   * the request's `timeout` parameter, or the transport's deadline (gRPC), whichever is sooner.
   */
  readonly deadline?: number;
  /** The request's `priority` parameter: lower levels are served first; 0 or absent, the default. */
  readonly priority?: number;
}

/** The statistics extension's per-model figures (times in nanoseconds, as KServe/Triton report). */
export interface ModelStats {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly lastInference: number;
  readonly success: { readonly count: number; readonly ns: number };
  readonly fail: { readonly count: number; readonly ns: number };
  readonly queue: { readonly count: number; readonly ns: number };
  readonly computeInput: { readonly count: number; readonly ns: number };
  readonly computeInfer: { readonly count: number; readonly ns: number };
  readonly computeOutput: { readonly count: number; readonly ns: number };
  /** Executions by their batch size (rows run together): Triton's batch_stats. */
  readonly batches: Readonly<Record<number, BatchFigures>>;
}

export interface BatchFigures {
  readonly computeInput: { readonly count: number; readonly ns: number };
  readonly computeInfer: { readonly count: number; readonly ns: number };
  readonly computeOutput: { readonly count: number; readonly ns: number };
}

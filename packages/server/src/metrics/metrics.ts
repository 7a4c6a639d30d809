import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { RequestBook, type RequestFigures, recordRequest } from "../stats/request-book.ts";
import { HotCounter, HotGauge, HotHistogram, type ScalarSeries, type HistogramSeries } from "./hot-series.ts";

/** The model label of requests for a model the worker does not have. */
export const UNKNOWN_MODEL = "_unknown";

/**
 * Every Prometheus series the worker exposes, with ReactantServer's names where it has them.
 * One Registry per instance (not prom-client's global one) so tests and several apps in one
 * process never share counters. The server updates the request series itself; the worker holds
 * this object and updates the memory, weight-cache and program-cache series.
 */
export class Metrics {
  readonly registry = new Registry();

  constructor() {
    // process_* (CPU seconds, resident memory, open files, start time) and the runtime's own.
    collectDefaultMetrics({ register: this.registry });
    this.shed.labels(); // 0 until a request is shed, rather than absent
  }

  /**
   * Finished infer requests by model, status and protocol: the HTTP status code ("200", "400",
   * ...) for protocol "http", the gRPC status name ("OK", "INVALID_ARGUMENT", ...) for "grpc".
   */
  readonly requests = new HotCounter(
    "worker_requests_total",
    "Inference requests answered, by model, status (HTTP code or gRPC status name) and protocol (http, grpc)",
    ["model", "status", "protocol"],
    this.registry,
  );
  readonly requestLatency = new HotHistogram(
    "worker_request_latency_seconds",
    "Inference request latency from body read to response, in seconds",
    ["model", "protocol"],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    this.registry,
  );
  /** Requests refused because a model's queue was full, as ReactantServer counts its sheds. */
  readonly shed = new HotCounter(
    "worker_requests_shed_total",
    "Requests refused at a full queue (429 / RESOURCE_EXHAUSTED)",
    [],
    this.registry,
  );
  /** Requests waiting for a model's concurrency slot (set by the worker's scheduler). */
  readonly queueDepth = new HotGauge("worker_queue_depth", "Requests queued per model", ["model"], this.registry);
  readonly computeSeconds = new HotCounter(
    "worker_compute_seconds_total",
    "Seconds spent executing programs, per model",
    ["model"],
    this.registry,
  );
  readonly deviceMemoryInUse = new Gauge({
    name: "worker_device_memory_in_use_bytes",
    help: "Device memory in use",
    labelNames: ["device"] as const,
    registers: [this.registry],
  });
  readonly deviceMemoryPeak = new Gauge({
    name: "worker_device_memory_peak_bytes",
    help: "Peak device memory since the last reset",
    labelNames: ["device"] as const,
    registers: [this.registry],
  });
  readonly deviceMemoryLimit = new Gauge({
    name: "worker_device_memory_limit_bytes",
    help: "Device memory limit",
    labelNames: ["device"] as const,
    registers: [this.registry],
  });
  readonly weightCacheCapacity = new Gauge({
    name: "worker_weight_cache_capacity_bytes",
    help: "Bytes of the weight budget available to on-demand (evictable) weights",
    labelNames: ["device"] as const,
    registers: [this.registry],
  });
  readonly weightCacheUsed = new Gauge({
    name: "worker_weight_cache_used_bytes",
    help: "Bytes of on-demand weights resident on the device",
    labelNames: ["device"] as const,
    registers: [this.registry],
  });
  readonly weightLoads = new Counter({
    name: "worker_weight_loads_total",
    help: "Weight uploads to the device, per model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly weightEvicts = new Counter({
    name: "worker_weight_evicts_total",
    help: "Weight evictions from the device, per model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly cacheHits = new Counter({
    name: "xlaserve_cache_hits_total",
    help: "Programs found in the program cache",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly cacheMisses = new Counter({
    name: "xlaserve_cache_misses_total",
    help: "Programs not found in the program cache",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly cacheCompiles = new Counter({
    name: "xlaserve_cache_compiles_total",
    help: "Programs compiled (cache misses and invalidated entries)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly cacheLoads = new Counter({
    name: "xlaserve_cache_loads_total",
    help: "Programs deserialized from the program cache",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });

  private readonly scrapeHooks: Array<() => void | Promise<void>> = [];

  /** Every answered request by model: the statistics extension's success / fail figures. */
  readonly requestBook = new RequestBook();

  /** Series handles by label values: one Map lookup per update, no label hashing. */
  private readonly requestSeries = new Map<
    string,
    { done: ScalarSeries; latency: HistogramSeries; book: RequestFigures | null; ok: boolean; shed: boolean }
  >();

  /**
   * One answered infer request: worker_requests_total, worker_request_latency_seconds and the
   * request book, together, so the statistics extension and /metrics never disagree. `error`: a
   * failure's message, kept as the model's last error for the status page.
   */
  requestDone(model: string, status: string, seconds: number, protocol = "http", error?: string): void {
    const key = `${model}\u0000${status}\u0000${protocol}`;
    let s = this.requestSeries.get(key);
    if (!s) {
      s = {
        done: this.requests.labels(model, status, protocol),
        latency: this.requestLatency.labels(model, protocol),
        // Requests for no model of the worker are counted in /metrics only.
        book: model === UNKNOWN_MODEL ? null : this.requestBook.entry(model),
        ok: status === "200" || status === "OK",
        shed: status === "429" || status === "RESOURCE_EXHAUSTED",
      };
      this.requestSeries.set(key, s);
    }
    s.done.inc();
    s.latency.observe(seconds);
    if (s.book) recordRequest(s.book, s.ok, seconds, status, error);
    if (s.shed) this.shed.labels().inc();
  }

  setQueueDepth(model: string, depth: number): void {
    this.queueDepth.labels(model).set(depth);
  }

  addComputeSeconds(model: string, seconds: number): void {
    this.computeSeconds.labels(model).inc(seconds);
  }

  /**
   * Runs `hook` before each scrape, so values that are cheap to read but costly to push on
   * every change (device memory) can be sampled when Prometheus asks.
   */
  onScrape(hook: () => void | Promise<void>): void {
    this.scrapeHooks.push(hook);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text. */
  async text(): Promise<string> {
    for (const hook of this.scrapeHooks) await hook();
    return this.registry.metrics();
  }
}

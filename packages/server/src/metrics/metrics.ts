import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * Every Prometheus series the worker exposes, with ReactantServer's names where it has them.
 * One Registry per instance (not prom-client's global one) so tests and several apps in one
 * process never share counters. The server updates the request series itself; the worker holds
 * this object and updates the memory, weight-cache and program-cache series.
 */
export class Metrics {
  readonly registry = new Registry();

  /** Finished infer requests by model and HTTP status code ("200", "400", ...). */
  readonly requests = new Counter({
    name: "worker_requests_total",
    help: "Inference requests answered, by model and HTTP status",
    labelNames: ["model", "status"] as const,
    registers: [this.registry],
  });
  readonly requestLatency = new Histogram({
    name: "worker_request_latency_seconds",
    help: "Inference request latency from body read to response, in seconds",
    labelNames: ["model"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /** Requests waiting for a model's concurrency slot (set by the worker's scheduler). */
  readonly queueDepth = new Gauge({
    name: "worker_queue_depth",
    help: "Requests queued per model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly computeSeconds = new Counter({
    name: "worker_compute_seconds_total",
    help: "Seconds spent executing programs, per model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
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

  /**
   * Per-label series handles, looked up once: prom-client hashes the label object on every
   * inc/observe/set otherwise, several times per request.
   */
  private readonly requestSeries = new Map<string, { done: { inc(): void }; latency: { observe(v: number): void } }>();
  private readonly queueSeries = new Map<string, { set(v: number): void }>();
  private readonly computeSeries = new Map<string, { inc(v: number): void }>();

  /** One answered infer request: worker_requests_total and worker_request_latency_seconds. */
  requestDone(model: string, status: string, seconds: number): void {
    const key = `${model}\u0000${status}`;
    let s = this.requestSeries.get(key);
    if (!s) {
      s = { done: this.requests.labels({ model, status }), latency: this.requestLatency.labels({ model }) };
      this.requestSeries.set(key, s);
    }
    s.done.inc();
    s.latency.observe(seconds);
  }

  setQueueDepth(model: string, depth: number): void {
    let g = this.queueSeries.get(model);
    if (!g) {
      g = this.queueDepth.labels({ model });
      this.queueSeries.set(model, g);
    }
    g.set(depth);
  }

  addComputeSeconds(model: string, seconds: number): void {
    let c = this.computeSeries.get(model);
    if (!c) {
      c = this.computeSeconds.labels({ model });
      this.computeSeries.set(model, c);
    }
    c.inc(seconds);
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

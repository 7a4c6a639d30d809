import type { Metric, Registry } from "prom-client";
import type { ModelRegistryView } from "../contract.ts";
import { type ModelStatisticsJson, allStatistics } from "../stats/service.ts";
import type { Metrics } from "./metrics.ts";

/**
 * The statistics extension's figures as Prometheus series: Triton's nv_inference_* names (what
 * Triton's dashboards and perf tools read) and ReactantServer's per-model dispatch series. They
 * are rendered at scrape time from the very JSON GET /v2/models/stats answers, so the two views
 * cannot disagree.
 */

type Sample = { value: number; labels: Record<string, string | number> };

interface Served {
  readonly stats: ModelStatisticsJson;
  readonly maxBatchSize: number;
  readonly wait: { p50: number; p99: number } | null;
}

/** A metric whose samples are read from the latest snapshot when the registry formats it. */
class SnapshotMetric {
  readonly aggregator = "sum";
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge",
    private readonly read: () => Sample[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }
  get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.read() };
  }
  reset(): void {}
}

export function registerStatisticsSeries(metrics: Metrics, registry: ModelRegistryView): void {
  let served: Served[] = [];
  metrics.onScrape(() => {
    served = allStatistics(registry, metrics.requestBook).model_stats.map((stats) => {
      const model = registry.getModel(stats.name);
      return {
        stats,
        maxBatchSize: model?.maxBatchSize ?? 0,
        wait: model?.queueWaitQuantiles?.() ?? null,
      };
    });
  });
  const r = metrics.registry;
  const triton = (name: string, help: string, type: "counter" | "gauge", f: (s: ModelStatisticsJson) => number) =>
    new SnapshotMetric(
      name,
      help,
      type,
      () => served.map((m) => ({ labels: { model: m.stats.name, version: m.stats.version }, value: f(m.stats) })),
      r,
    );
  const us = (d: { ns: number }) => d.ns / 1000;
  triton(
    "nv_inference_request_success",
    "Successful inference requests",
    "counter",
    (s) => s.inference_stats.success.count,
  );
  triton("nv_inference_request_failure", "Failed inference requests", "counter", (s) => s.inference_stats.fail.count);
  triton("nv_inference_count", "Inferences performed (a batch of N counts N)", "counter", (s) => s.inference_count);
  triton("nv_inference_exec_count", "Model executions performed", "counter", (s) => s.execution_count);
  triton(
    "nv_inference_request_duration_us",
    "Cumulative request duration, successes and failures (us)",
    "counter",
    (s) => us(s.inference_stats.success) + us(s.inference_stats.fail),
  );
  triton("nv_inference_queue_duration_us", "Cumulative queue time (us)", "counter", (s) => us(s.inference_stats.queue));
  triton("nv_inference_compute_input_duration_us", "Cumulative input preparation time (us)", "counter", (s) =>
    us(s.inference_stats.compute_input),
  );
  triton("nv_inference_compute_infer_duration_us", "Cumulative model execution time (us)", "counter", (s) =>
    us(s.inference_stats.compute_infer),
  );
  triton("nv_inference_compute_output_duration_us", "Cumulative output extraction time (us)", "counter", (s) =>
    us(s.inference_stats.compute_output),
  );
  new SnapshotMetric(
    "nv_inference_pending_request_count",
    "Requests waiting to run",
    "gauge",
    () =>
      served.map((m) => ({
        labels: { model: m.stats.name, version: m.stats.version },
        value: metrics.queueDepth.labels(m.stats.name).value,
      })),
    r,
  );

  const perModel = (name: string, help: string, type: "counter" | "gauge", f: (m: Served) => number) =>
    new SnapshotMetric(
      name,
      help,
      type,
      () => served.map((m) => ({ labels: { model: m.stats.name }, value: f(m) })),
      r,
    );
  perModel("worker_dispatch_total", "Executions per model", "counter", (m) => m.stats.execution_count);
  perModel(
    "worker_requests_served_total",
    "Requests answered successfully per model (served / dispatch = requests merged per execution)",
    "counter",
    (m) => m.stats.inference_stats.success.count,
  );
  perModel(
    "worker_rows_served_total",
    "Batch rows answered per model (rows / dispatch = effective batch size)",
    "counter",
    (m) => m.stats.inference_count,
  );
  perModel(
    "worker_model_max_batch_size",
    "Largest batch a request or merged execution may have",
    "gauge",
    (m) => m.maxBatchSize,
  );
  new SnapshotMetric(
    "worker_queue_wait_seconds",
    "Queue wait of recent requests per model: median and 99th percentile (seconds)",
    "gauge",
    () =>
      served.flatMap((m) =>
        m.wait
          ? [
              { labels: { model: m.stats.name, quantile: "0.5" }, value: m.wait.p50 },
              { labels: { model: m.stats.name, quantile: "0.99" }, value: m.wait.p99 },
            ]
          : [],
      ),
    r,
  );
}

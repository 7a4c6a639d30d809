import type { Metric, Registry } from "prom-client";

/**
 * Series updated on every request, kept as plain numbers and formatted by prom-client only when
 * Prometheus scrapes. prom-client's own Counter / Histogram hash the label object on every update
 * (a few microseconds per request across the request series); these look a series up once per
 * label set and then only add. They register in a prom-client Registry like any metric: the
 * Registry calls get() at scrape time and writes the exposition text.
 */

type MetricType = "counter" | "gauge" | "histogram";

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

abstract class HotMetric<S extends { readonly labels: Record<string, string> }> {
  private readonly series = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series for these label values, in labelNames order (created on first use). */
  labels(...values: string[]): S {
    const key = values.length === 1 ? (values[0] as string) : values.join("\u0000");
    let s = this.series.get(key);
    if (!s) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => {
        labels[n] = values[i] ?? "";
      });
      s = this.create(labels);
      this.series.set(key, s);
    }
    return s;
  }

  protected abstract create(labels: Record<string, string>): S;
  protected abstract samples(series: S): Sample[];

  /** prom-client's Metric.get(): what the Registry formats. */
  get(): { name: string; help: string; type: MetricType; aggregator: "sum"; values: Sample[] } {
    const values: Sample[] = [];
    for (const s of this.series.values()) values.push(...this.samples(s));
    return { name: this.name, help: this.help, type: this.type, aggregator: "sum", values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** One counter or gauge series: a number (counters only ever inc, gauges set). */
export class ScalarSeries {
  value = 0;
  constructor(readonly labels: Record<string, string>) {}
  inc(by = 1): void {
    this.value += by;
  }
  set(value: number): void {
    this.value = value;
  }
}

class HotScalar extends HotMetric<ScalarSeries> {
  protected create(labels: Record<string, string>): ScalarSeries {
    return new ScalarSeries(labels);
  }
  protected samples(s: ScalarSeries): Sample[] {
    return [{ value: s.value, labels: s.labels }];
  }
}

export class HotCounter extends HotScalar {
  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, "counter", labelNames, registry);
  }
}

export class HotGauge extends HotScalar {
  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, "gauge", labelNames, registry);
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    (this.counts[i] as number)++;
    this.sum += value;
    this.count++;
  }
}

export class HotHistogram extends HotMetric<HistogramSeries> {
  private readonly bounds: readonly number[];
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    super(name, help, "histogram", labelNames, registry);
    this.bounds = [...buckets].sort((a, b) => a - b);
  }
  protected create(labels: Record<string, string>): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }
  protected samples(s: HistogramSeries): Sample[] {
    const out: Sample[] = [];
    let cumulative = 0;
    for (let i = 0; i <= this.bounds.length; i++) {
      cumulative += s.counts[i] as number;
      const le = i < this.bounds.length ? (this.bounds[i] as number) : "+Inf";
      out.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
    }
    out.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
    out.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    return out;
  }
}

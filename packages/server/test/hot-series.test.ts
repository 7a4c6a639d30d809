import { describe, expect, test } from "bun:test";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { HotCounter, HotGauge, HotHistogram } from "../src/metrics/hot-series.ts";

/** Exposition lines with each sample's labels sorted, so two writers' label order does not matter. */
function normalized(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((line) => {
      const m = /^([^{ ]+)\{([^}]*)\} (.*)$/.exec(line);
      if (!m) return line;
      const labels = (m[2] as string).split(",").sort().join(",");
      return `${m[1]}{${labels}} ${m[3]}`;
    })
    .sort();
}

describe("hot series: the same exposition as prom-client's own metrics", () => {
  const buckets = [0.001, 0.01, 0.1, 1];
  const observations = [0.0005, 0.001, 0.002, 0.05, 0.05, 0.5, 3, 0.1];

  test("histogram buckets are cumulative with +Inf, _sum and _count, per label set", async () => {
    const hot = new Registry();
    const ref = new Registry();
    const h = new HotHistogram("lat_seconds", "latency", ["model"], buckets, hot);
    const r = new Histogram({ name: "lat_seconds", help: "latency", labelNames: ["model"], buckets, registers: [ref] });
    observations.forEach((v, i) => {
      const model = i % 3 === 0 ? "a" : "b";
      h.labels(model).observe(v);
      r.observe({ model }, v);
    });
    expect(normalized(await hot.metrics())).toEqual(normalized(await ref.metrics()));
  });

  test("counters and gauges with several labels", async () => {
    const hot = new Registry();
    const ref = new Registry();
    const c = new HotCounter("req_total", "requests", ["model", "status"], hot);
    const rc = new Counter({ name: "req_total", help: "requests", labelNames: ["model", "status"], registers: [ref] });
    const g = new HotGauge("depth", "queue", ["model"], hot);
    const rg = new Gauge({ name: "depth", help: "queue", labelNames: ["model"], registers: [ref] });
    for (const [model, status] of [
      ["a", "200"],
      ["a", "200"],
      ["a", "400"],
      ["b", "200"],
    ] as const) {
      c.labels(model, status).inc();
      rc.inc({ model, status });
    }
    c.labels("b", "200").inc(2.5);
    rc.inc({ model: "b", status: "200" }, 2.5);
    g.labels("a").set(3);
    g.labels("a").set(1);
    rg.set({ model: "a" }, 1);
    expect(normalized(await hot.metrics())).toEqual(normalized(await ref.metrics()));
  });

  test("a label set is one series: the handle is reused", () => {
    const c = new HotCounter("x_total", "x", ["model"], new Registry());
    expect(c.labels("m")).toBe(c.labels("m"));
    expect(c.labels("m")).not.toBe(c.labels("n"));
  });
});

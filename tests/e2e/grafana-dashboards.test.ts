/**
 * The Grafana dashboards under deploy/grafana/ query what the worker exports: every metric name
 * in every panel's PromQL is a family of the worker's real /metrics (a histogram's _bucket /
 * _sum / _count included), and every label a query selects or groups by is on that family's
 * samples (or is one Prometheus adds at scrape time: instance, job).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { parseExposition } from "../../packages/server/test/support/exposition.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "./helpers.ts";

const DIR = resolve(import.meta.dir, "../../deploy/grafana");
const SCRAPE_LABELS = new Set(["instance", "job"]);
/**
 * Series that have no sample on this machine's worker, and why: the CPU engine reports no device
 * memory limit (PJRT does), and nothing is evicted while every model fits.
 */
const NO_SAMPLE_HERE: Record<string, string> = {
  worker_device_memory_limit_bytes: "the CPU engine has no device memory limit",
  worker_device_memory_free_bytes: "the CPU engine has no device memory limit",
  worker_weight_evicts_total: "no eviction while every model fits",
};
const PROMQL_WORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "bool",
  "and",
  "or",
  "unless",
  "offset",
  "inf",
  "nan",
]);

interface Panel {
  title: string;
  targets?: { expr: string }[];
}

/** Metric names and label names one PromQL expression uses. */
export function promqlNames(expr: string): { metrics: Set<string>; labels: Set<string> } {
  const labels = new Set<string>();
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  rest = rest.replace(/\{([^}]*)\}/g, (_m, inner: string) => {
    for (const m of inner.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.add(m[1] as string);
    return " ";
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_m, inner: string) => {
    for (const l of inner.split(",")) if (l.trim()) labels.add(l.trim());
    return " ";
  });
  rest = rest.replace(/\[[^\]]*\]/g, " ").replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi, " ");
  const metrics = new Set<string>();
  for (const m of rest.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const name = m[1] as string;
    if (m[2] || PROMQL_WORDS.has(name.toLowerCase()) || /^\d/.test(name)) continue;
    metrics.add(name);
  }
  return { metrics, labels };
}

let repo: TempRepo;
let worker: StartedWorker;
let exposition: ReturnType<typeof parseExposition>;
beforeAll(async () => {
  repo = makeRepo(["mlp", "cnn"]);
  const start = () =>
    startCpuWorker(repo, collectLogs().logger, { repository: { dynamic: false } }, { inlineMaxUs: 0 });
  // A restart, so that the program cache has hits and loads to show.
  await (await start()).stop();
  worker = await start();
  const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
  for (let i = 0; i < 3; i++) await inferJson(worker.url, "mlp", inputs);
  exposition = parseExposition(await (await fetch(`${worker.url}/metrics`)).text());
});
afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

/** The family a sample name belongs to (a histogram's _bucket / _sum / _count). */
function familyOf(name: string): string | undefined {
  if (exposition.types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return exposition.types.get(base) === "histogram" ? base : undefined;
}

const files = readdirSync(DIR).filter((f) => f.endsWith(".json"));

describe("Grafana dashboards", () => {
  test("fleet, latency and throughput, device memory and program cache dashboards are there", () => {
    expect(files.sort()).toEqual(["device-memory.json", "fleet.json", "latency-throughput.json", "program-cache.json"]);
  });

  test("the PromQL reader finds names and labels", () => {
    const n = promqlNames(
      'histogram_quantile(0.99, sum by (le, model) (rate(worker_request_latency_seconds_bucket{instance=~"$i",status!="x"}[5m])))',
    );
    expect([...n.metrics]).toEqual(["worker_request_latency_seconds_bucket"]);
    expect([...n.labels].sort()).toEqual(["instance", "le", "model", "status"]);
  });

  for (const file of files) {
    test(`${file}: every panel's query uses series and labels the worker exports`, () => {
      const dashboard = JSON.parse(readFileSync(join(DIR, file), "utf8")) as { panels: Panel[]; uid: string };
      expect(dashboard.uid).toStartWith("xlaserve-");
      const problems: string[] = [];
      let queries = 0;
      for (const panel of dashboard.panels) {
        expect(panel.targets?.length ?? 0).toBeGreaterThan(0);
        for (const { expr } of panel.targets ?? []) {
          queries++;
          const { metrics, labels } = promqlNames(expr);
          if (metrics.size === 0) problems.push(`${panel.title}: no metric in ${expr}`);
          const samples = exposition.samples.filter((s) => [...metrics].includes(s.name));
          for (const m of metrics) {
            if (!familyOf(m)) problems.push(`${panel.title}: ${m} is not in /metrics`);
            else if (!samples.some((s) => s.name === m) && !NO_SAMPLE_HERE[m]) {
              problems.push(`${panel.title}: ${m} has no sample`);
            }
          }
          for (const l of labels) {
            if (SCRAPE_LABELS.has(l) || samples.length === 0) continue;
            if (!samples.some((s) => l in s.labels))
              problems.push(`${panel.title}: no series of ${expr} has label ${l}`);
          }
        }
      }
      expect(queries).toBeGreaterThan(3);
      expect(problems).toEqual([]);
    });
  }
});

/**
 * HTTP load for the benchmarks: N keep-alive connections POSTing one body for a time, from a
 * process other than the server's. wrk (Debian package) where asked and installed, else fetch
 * loops in a Bun child (bench/lib/http-load-child.ts), optionally several children at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadResult } from "./load-result.ts";

/** The examples' MLP request the HTTP benchmarks send: one row of 64 features, as JSON. */
export const MLP_REQUEST_BODY = JSON.stringify({
  inputs: [
    {
      name: "features",
      shape: [1, 64],
      datatype: "FP32",
      data: Array.from({ length: 64 }, (_, i) => Math.round(Math.sin(i) * 1000) / 1000),
    },
  ],
});

export interface HttpLoadSpec {
  url: string;
  body: string;
  connections: number;
  seconds: number;
}

/** A load run's figures (the server's CPU time per request is the caller's to add). */
export type HttpLoadResult = LoadResult;

export interface LoadGenerator {
  readonly kind: "wrk" | "bun";
  /** wrk's threads. */
  readonly wrkThreads?: number;
  /** bun: fetch-loop processes, the connections split among them. */
  readonly children?: number;
  /** Runs the generator under `taskset -c` on these CPUs. */
  readonly cpus?: string;
}

/** wrk where it is installed, else the fetch loops. */
export function defaultGenerator(): "wrk" | "bun" {
  return Bun.which("wrk") ? "wrk" : "bun";
}

/** One load run of `spec` from `gen`. */
export function httpLoad(spec: HttpLoadSpec, gen: LoadGenerator): Promise<HttpLoadResult> {
  const pin = gen.cpus ? ["taskset", "-c", gen.cpus] : [];
  return gen.kind === "wrk" ? wrkLoad(spec, gen.wrkThreads ?? 1, pin) : bunLoad(spec, gen.children ?? 1, pin);
}

/** wrk with a POST script; --latency prints the percentiles parsed here. */
async function wrkLoad(spec: HttpLoadSpec, threads: number, pin: readonly string[]): Promise<HttpLoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-wrk-"));
  const script = join(dir, "post.lua");
  writeFileSync(
    script,
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = ${JSON.stringify(spec.body)}\n` +
      "done = function(summary, latency, requests)\n" +
      '  io.write(string.format("JSON{\\"requests\\":%d,\\"seconds\\":%f,\\"p50\\":%f,\\"p99\\":%f,\\"errors\\":%d}\\n",\n' +
      "    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3,\n" +
      "    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))\n" +
      "end\n",
  );
  const proc = Bun.spawn(
    [
      ...pin,
      "wrk",
      "-t",
      String(threads),
      "-c",
      String(spec.connections),
      "-d",
      `${spec.seconds}s`,
      "-s",
      script,
      spec.url,
    ],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  rmSync(dir, { recursive: true, force: true });
  const line = out.split("\n").find((l) => l.startsWith("JSON{"));
  if (!line) throw new Error(`wrk printed no result:\n${out}`);
  const r = JSON.parse(line.slice(4)) as {
    requests: number;
    seconds: number;
    p50: number;
    p99: number;
    errors: number;
  };
  return {
    requests: r.requests,
    errors: r.errors,
    seconds: r.seconds,
    rps: r.requests / r.seconds,
    p50Ms: r.p50,
    p99Ms: r.p99,
  };
}

/** The fetch generator in `children` child processes (connections split among them), pooled. */
async function bunLoad(spec: HttpLoadSpec, children: number, pin: readonly string[]): Promise<HttpLoadResult> {
  const child = join(import.meta.dir, "http-load-child.ts");
  const parts = Array.from({ length: children }, (_, i) => {
    const connections = Math.floor(spec.connections / children) + (i < spec.connections % children ? 1 : 0);
    const proc = Bun.spawn([...pin, process.execPath, child, JSON.stringify({ ...spec, connections })], {
      stdout: "pipe",
      stderr: "inherit",
    });
    return (async () => {
      const out = await new Response(proc.stdout).text();
      if ((await proc.exited) !== 0) throw new Error(`the load generator failed:\n${out}`);
      return JSON.parse(out.trim().split("\n").pop() as string) as HttpLoadResult;
    })();
  });
  const results = await Promise.all(parts);
  if (results.length === 1) return results[0] as HttpLoadResult;
  // Each child reports its own percentiles: p50 pooled weighted by requests, p99 the worst child's.
  const requests = results.reduce((a, r) => a + r.requests, 0);
  const weighted = (k: "p50Ms") => results.reduce((a, r) => a + r[k] * r.requests, 0) / Math.max(1, requests);
  const seconds = Math.max(...results.map((r) => r.seconds));
  return {
    requests,
    errors: results.reduce((a, r) => a + r.errors, 0),
    seconds,
    rps: results.reduce((a, r) => a + r.rps, 0),
    p50Ms: weighted("p50Ms"),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
  };
}

/** N concurrent keep-alive fetch loops for a bounded time (and at most 10 M requests). */
export async function fetchLoad(spec: HttpLoadSpec): Promise<HttpLoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const deadline = start + spec.seconds * 1000;
  const headers = { "content-type": "application/json" };
  const loop = async () => {
    while (performance.now() < deadline && latencies.length < 10_000_000) {
      const t0 = performance.now();
      const response = await fetch(spec.url, { method: "POST", headers, body: spec.body });
      await response.arrayBuffer();
      if (response.status !== 200) errors++;
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, loop));
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: pick(0.5),
    p99Ms: pick(0.99),
  };
}

/**
 * The load of the gRPC benchmark, in a Bun process of its own so that it does not share the
 * serving process's event loop: `concurrency` calls in flight over one HTTP/2 channel for gRPC
 * (pre-encoded ModelInferRequest bytes, answers not decoded), keep-alive fetch loops for REST.
 *   bun bench/grpc/load.ts '<LoadSpec JSON>'   -> one LoadResult JSON line
 */
import { rawInferClient } from "../../packages/server/src/grpc/raw-client.ts";
import type { LoadResult } from "../lib/load-result.ts";
import { percentile } from "../lib/stats.ts";

export type { LoadResult };

export interface LoadSpec {
  readonly kind: "grpc" | "rest";
  /** gRPC host:port, or the REST infer URL. */
  readonly target: string;
  /** Base64 of the ModelInferRequest bytes, or of the REST body. */
  readonly body: string;
  readonly headerLength?: number;
  readonly concurrency: number;
  readonly seconds: number;
}

const WARM_UP_CALLS = 50;

async function generate(spec: LoadSpec): Promise<LoadResult> {
  const body = Buffer.from(spec.body, "base64");
  const latencies: number[] = [];
  let errors = 0;
  let one: () => Promise<boolean>;
  let close = () => {};
  if (spec.kind === "grpc") {
    const client = rawInferClient(spec.target);
    one = async () => (await client.modelInfer(body)).error === null;
    close = () => client.close();
  } else {
    const headers = {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(spec.headerLength),
    };
    one = async () => {
      const r = await fetch(spec.target, { method: "POST", headers, body });
      await r.arrayBuffer();
      return r.status === 200;
    };
  }
  // Warm-up: connections open, code paths compiled.
  for (let i = 0; i < WARM_UP_CALLS; i++) await one();
  const start = performance.now();
  const end = start + spec.seconds * 1000;
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const ok = await one();
        latencies.push(performance.now() - t);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  close();
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: Math.round(latencies.length / seconds),
    p50Ms: Math.round(percentile(latencies, 50) * 1000) / 1000,
    p99Ms: Math.round(percentile(latencies, 99) * 1000) / 1000,
  };
}

/** Runs one load in its own process; the serving process's CPU time per request comes with it. */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const cpu0 = process.cpuUsage();
  const proc = Bun.spawn([process.execPath, import.meta.path, JSON.stringify(spec)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`the load generator failed: ${out}`);
  const result = JSON.parse(out.trim().split("\n").at(-1) as string) as LoadResult;
  const cpu = process.cpuUsage(cpu0);
  result.serverCpuUsPerRequest = Math.round(((cpu.user + cpu.system) / (result.requests + WARM_UP_CALLS)) * 10) / 10;
  return result;
}

if (import.meta.main) {
  console.log(JSON.stringify(await generate(JSON.parse(process.argv[2] as string) as LoadSpec)));
  process.exit(0);
}

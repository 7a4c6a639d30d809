/**
 * ModelInfer throughput against its anchors, on a shared and noisy machine: every side first
 * runs one untimed load (the serving code reaches its steady state: JIT tiers, inline runs),
 * then the sides take turns for `rounds` rounds, each round starting with the next side. A ratio
 * is taken within each round (its two sides ran minutes apart at most, under the same load) and
 * the median of those per-round ratios is reported, beside the median of each side's figures.
 */
import type { BenchResult } from "../lib/results.ts";
import { median } from "../lib/stats.ts";
import { type LoadResult, type LoadSpec, load } from "./load.ts";

/**
 * bare: a grpc-js server; bareH2: the worker's own transport (node:http2) with nothing behind it;
 * grpc and rest: the worker.
 */
export type Side = "bare" | "bareH2" | "grpc" | "rest";
const SIDES: readonly Side[] = ["bare", "bareH2", "grpc", "rest"];

interface SideMedians {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly serverCpuUsPerRequest: number;
}

export interface ThroughputOptions {
  readonly specs: Record<Side, LoadSpec>;
  readonly rounds: number;
  readonly warmUpSeconds: number;
}

/** The median over rounds of a per-round ratio, with the rounds' values. */
function pairedMedian(
  rounds: readonly Partial<Record<Side, LoadResult>>[],
  value: (r: Partial<Record<Side, LoadResult>>) => number | undefined,
): { median: number; perRound: number[] } {
  const perRound = rounds.map(value).filter((v): v is number => v !== undefined && Number.isFinite(v));
  return { median: Math.round(median(perRound) * 10_000) / 10_000, perRound: perRound.map((v) => round4(v)) };
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

function medianOf(runs: readonly LoadResult[], key: "rps" | "p50Ms" | "p99Ms" | "serverCpuUsPerRequest"): number {
  return Math.round(median(runs.map((r) => r[key] ?? Number.NaN)) * 1000) / 1000;
}

export async function measureThroughput(result: BenchResult, options: ThroughputOptions): Promise<void> {
  const { specs, rounds } = options;
  for (const side of SIDES) {
    await result.step(`warm-up ${side}`, () => load({ ...specs[side], seconds: options.warmUpSeconds }));
  }
  const perRound: Partial<Record<Side, LoadResult>>[] = [];
  const all: Record<Side, LoadResult[]> = { bare: [], bareH2: [], grpc: [], rest: [] };
  for (let r = 0; r < rounds; r++) {
    const round: Partial<Record<Side, LoadResult>> = {};
    const at = r % SIDES.length;
    for (const side of [...SIDES.slice(at), ...SIDES.slice(0, at)]) {
      const run = await result.step(`load ${side} round ${r}`, () => load(specs[side]));
      if (!run) continue;
      round[side] = run;
      all[side].push(run);
      console.log(`  ${side.padEnd(6)} round ${r}: ${run.rps} req/s  p50 ${run.p50Ms} ms  p99 ${run.p99Ms} ms`);
    }
    perRound.push(round);
  }
  result.figure("rounds", all);
  const summary = (side: Side): SideMedians => ({
    rps: medianOf(all[side], "rps"),
    p50Ms: medianOf(all[side], "p50Ms"),
    p99Ms: medianOf(all[side], "p99Ms"),
    serverCpuUsPerRequest: medianOf(all[side], "serverCpuUsPerRequest"),
  });
  const medians: Record<Side, SideMedians> = {
    bare: summary("bare"),
    bareH2: summary("bareH2"),
    grpc: summary("grpc"),
    rest: summary("rest"),
  };
  result.figure("medians", medians);

  // [key, numerator side and label, denominator side and label, figure, goal]: a ratio of the
  // sides' medians, noted with the median of the same ratio taken within each round.
  const ratios: [string, [Side, string], [Side, string], keyof SideMedians, string?][] = [
    [
      "grpc_vs_bare_requests_per_second",
      ["grpc", "xlaserve gRPC ModelInfer (MLP) req/s"],
      ["bare", "bare grpc-js, same-size answer, req/s"],
      "rps",
      ">= 0.8",
    ],
    [
      "grpc_vs_bare_server_cpu_per_request",
      ["bare", "bare grpc-js server CPU us/request"],
      ["grpc", "xlaserve gRPC server CPU us/request"],
      "serverCpuUsPerRequest",
    ],
    ["grpc_vs_bare_p50", ["bare", "bare p50 ms"], ["grpc", "xlaserve gRPC p50 ms"], "p50Ms"],
    [
      "grpc_vs_bare_h2_requests_per_second",
      ["grpc", "xlaserve gRPC ModelInfer (MLP) req/s"],
      ["bareH2", "bare server on the worker's own gRPC transport (node:http2), same-size answer, req/s"],
      "rps",
    ],
    [
      "grpc_vs_bare_h2_server_cpu_per_request",
      ["bareH2", "bare own-transport server CPU us/request"],
      ["grpc", "xlaserve gRPC server CPU us/request"],
      "serverCpuUsPerRequest",
    ],
    [
      "bare_h2_vs_bare_server_cpu_per_request",
      ["bare", "bare grpc-js server CPU us/request"],
      ["bareH2", "bare own-transport server CPU us/request"],
      "serverCpuUsPerRequest",
    ],
    [
      "grpc_vs_rest_requests_per_second",
      ["grpc", "xlaserve gRPC req/s"],
      ["rest", "xlaserve REST (binary tensors) req/s, same worker"],
      "rps",
    ],
    ["grpc_vs_rest_p99", ["rest", "REST p99 ms"], ["grpc", "gRPC p99 ms"], "p99Ms"],
  ];
  for (const [key, [top, topLabel], [bottom, bottomLabel], figure, goal] of ratios) {
    const paired = pairedMedian(perRound, (r) => {
      const a = r[top]?.[figure];
      const b = r[bottom]?.[figure];
      return a === undefined || b === undefined ? undefined : a / b;
    });
    result.figure(`${key}_per_round`, paired);
    result.ratio(
      key,
      { label: `${topLabel} (median of rounds)`, value: medians[top][figure] },
      { label: `${bottomLabel} (median of rounds)`, value: medians[bottom][figure] },
      goal,
      `median of the per-round ratios: ${paired.median} (rounds: ${paired.perRound.join(", ")})`,
    );
  }
}

/** One load generator's run against a server: counts, throughput and latency percentiles. */
export interface LoadResult {
  /** CPU time of the serving process per answered request, in microseconds (set by the parent). */
  serverCpuUsPerRequest?: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

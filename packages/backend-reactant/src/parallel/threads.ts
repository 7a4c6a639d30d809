/**
 * How many threads the engine's own parallel kernels use (the calling thread included): the
 * same setting as OpenBLAS's (XLASERVE_BLAS_THREADS, else every core this process may run on:
 * Bun's availableParallelism follows the affinity mask, so `taskset` and the worker's per-process
 * split of the cores both apply). 1 keeps every kernel on the calling thread.
 */
import { wantedThreads } from "../blas/library.ts";

let threads: number | undefined;

export function engineThreads(): number {
  threads ??= wantedThreads();
  return threads;
}

/** Overrides the setting for this JavaScript thread (tests and benchmarks compare counts). */
export function setEngineThreads(count: number): void {
  threads = Math.max(1, Math.floor(count));
}

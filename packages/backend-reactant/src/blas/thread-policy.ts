/**
 * How many OpenBLAS threads one GEMM gets. Waking the library's sleeping threads for a GEMM of a
 * few million multiply-adds costs more than the split saves, and far more on a loaded machine
 * where the other core is busy: on 2 shared cores a GPT decoder at batch 8 spent 5.8 ms per run
 * in dot_general with 2 threads and 1.7 ms with 1 (13 GEMMs of 0.5 to 4 million multiply-adds).
 * So a GEMM below THREADED_GEMM_MIN_WORK runs on one thread and a larger one on every thread
 * configured (XLASERVE_BLAS_THREADS, else the cores available), as XLA's cost model also keeps
 * small contractions on one thread. The library's setting changes only when the choice does.
 */
export const THREADED_GEMM_MIN_WORK = 2 ** 24;

export interface ThreadSetter {
  openblas_set_num_threads(threads: number): void;
}

let configured = 1;
let current = 0;

/** The thread count larger GEMMs use (set when the library loads and by setBlasThreads). */
export function configureThreads(library: ThreadSetter, threads: number): void {
  configured = Math.max(1, Math.floor(threads));
  current = configured;
  library.openblas_set_num_threads(configured);
}

export function configuredThreads(): number {
  return configured;
}

/** The threads a GEMM of m x n x k gets. */
export function threadsForGemm(m: number, n: number, k: number): number {
  return m * n * k >= THREADED_GEMM_MIN_WORK ? configured : 1;
}

/** Sets the library's thread count for the next call, calling it only when the count changes. */
export function useThreads(library: ThreadSetter, threads: number): void {
  if (threads === current) return;
  current = threads;
  library.openblas_set_num_threads(threads);
}

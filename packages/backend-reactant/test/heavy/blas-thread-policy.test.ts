import { afterAll, expect, test } from "bun:test";
import { blasStatus, gemm, setBlasThreads, wantedThreads } from "../../src/blas/index.ts";
import { THREADED_GEMM_MIN_WORK, configureThreads, threadsForGemm, useThreads } from "../../src/blas/thread-policy.ts";

afterAll(() => setBlasThreads(wantedThreads()));

test("small GEMMs run on one thread, large ones on every configured thread, the library told only on a change", () => {
  const calls: number[] = [];
  const library = { openblas_set_num_threads: (t: number) => calls.push(t) };
  configureThreads(library, 4);
  expect(calls).toEqual([4]);
  expect(threadsForGemm(256, 256, 64)).toBe(1);
  expect(threadsForGemm(1024, 1024, 16)).toBe(4);
  expect(threadsForGemm(THREADED_GEMM_MIN_WORK, 1, 1)).toBe(4);
  expect(threadsForGemm(THREADED_GEMM_MIN_WORK - 1, 1, 1)).toBe(1);
  for (const t of [1, 1, 1, 4, 4, 1]) useThreads(library, t);
  expect(calls).toEqual([4, 1, 4, 1]);
});

test("GEMMs either side of the threshold give the same product, and the configured count is reported", () => {
  setBlasThreads(2);
  if (blasStatus().library) expect(blasStatus().threads).toBe(2);
  // 512 x 256 x 128 is 2^24 multiply-adds (threaded), 512 x 255 x 128 just below (one thread).
  const m = 512;
  const k = 256;
  for (const kk of [k, k - 1]) {
    const a = new Float32Array(m * kk).map((_, i) => ((i * 7919) % 97) / 97 - 0.5);
    const b = new Float32Array(kk * 128).map((_, i) => ((i * 104729) % 89) / 89 - 0.5);
    const c = new Float32Array(m * 128);
    gemm({
      m,
      n: 128,
      k: kk,
      a,
      aOffset: 0,
      lda: kk,
      transA: false,
      b,
      bOffset: 0,
      ldb: 128,
      transB: false,
      c,
      cOffset: 0,
      ldc: 128,
      accumulate: false,
    });
    // Spot-check a few entries against the definition, in f64.
    for (const [i, j] of [
      [0, 0],
      [511, 127],
      [300, 64],
    ] as const) {
      let want = 0;
      for (let p = 0; p < kk; p++) want += (a[i * kk + p] as number) * (b[p * 128 + j] as number);
      expect(Math.abs((c[i * 128 + j] as number) - want)).toBeLessThan(1e-3);
    }
  }
});

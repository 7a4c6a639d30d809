import { describe, expect, test } from "bun:test";
import { blasStatus, candidatePaths, fallbackGemm, gemm, loadOpenBlas, wantedThreads } from "../../src/blas/index.ts";
import { coreTypeForFlags } from "../../src/blas/core-type.ts";
import { expectClose, rng } from "./helpers.ts";

function randomMatrix(next: () => number, n: number, f64: boolean): Float32Array | Float64Array {
  const out = f64 ? new Float64Array(new ArrayBuffer(n * 8)) : new Float32Array(new ArrayBuffer(n * 4));
  for (let i = 0; i < n; i++) out[i] = next() * 2 - 1;
  return out;
}

/** C = op(A) op(B) by the definition. */
function naive(
  m: number,
  n: number,
  k: number,
  a: ArrayLike<number>,
  transA: boolean,
  b: ArrayLike<number>,
  transB: boolean,
): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++)
        s += (a[transA ? p * m + i : i * k + p] as number) * (b[transB ? j * k + p : p * n + j] as number);
      c[i * n + j] = s;
    }
  return c;
}

describe("GEMM", () => {
  test("BLAS and the TypeScript fallback agree with the definition for every transpose and both precisions", () => {
    const next = rng(3);
    for (const f64 of [false, true]) {
      for (const transA of [false, true]) {
        for (const transB of [false, true]) {
          const [m, n, k] = [37, 131, 70];
          const a = randomMatrix(next, m * k, f64);
          const b = randomMatrix(next, k * n, f64);
          const expected = naive(m, n, k, a, transA, b, transB);
          const call = {
            m,
            n,
            k,
            a,
            aOffset: 0,
            lda: transA ? m : k,
            transA,
            b,
            bOffset: 0,
            ldb: transB ? k : n,
            transB,
            accumulate: false,
            cOffset: 0,
            ldc: n,
          };
          const viaGemm = f64 ? new Float64Array(m * n) : new Float32Array(m * n);
          gemm({ ...call, c: viaGemm });
          const viaFallback = f64 ? new Float64Array(m * n) : new Float32Array(m * n);
          fallbackGemm({ ...call, c: viaFallback });
          expectClose(viaGemm, expected, f64 ? 1e-12 : 1e-5);
          expectClose(viaFallback, expected, f64 ? 1e-12 : 1e-5);
        }
      }
    }
  });

  test("offsets, leading dimensions and accumulation address sub-matrices", () => {
    // C[1:3, 1:3] += A[1:3, 0:2] @ B[0:2, 1:3] inside 4x4 matrices.
    const a = new Float32Array(new ArrayBuffer(64)).map((_, i) => i);
    const b = new Float32Array(new ArrayBuffer(64)).map((_, i) => i % 3);
    const c = new Float32Array(new ArrayBuffer(64)).fill(1);
    gemm({
      m: 2,
      n: 2,
      k: 2,
      a,
      aOffset: 4,
      lda: 4,
      transA: false,
      b,
      bOffset: 1,
      ldb: 4,
      transB: false,
      c,
      cOffset: 5,
      ldc: 4,
      accumulate: true,
    });
    // A rows [4,5], [8,9]; B rows [1,2], [2,0] (b[5]=2, b[6]=0).
    expect(Array.from(c)).toEqual([1, 1, 1, 1, 1, 15, 9, 1, 1, 27, 17, 1, 1, 1, 1, 1]);
  });

  test("sub-matrix addressing also holds on the BLAS path (sizes above the small-GEMM loop)", () => {
    const next = rng(4);
    const [m, n, k, ld] = [40, 36, 30, 50];
    const a = randomMatrix(next, ld * ld, false);
    const b = randomMatrix(next, ld * ld, false);
    const c = new Float32Array(new ArrayBuffer(ld * ld * 4)).fill(2);
    gemm({
      m,
      n,
      k,
      a,
      aOffset: ld + 3,
      lda: ld,
      transA: false,
      b,
      bOffset: 2 * ld + 5,
      ldb: ld,
      transB: false,
      c,
      cOffset: 7,
      ldc: ld,
      accumulate: true,
    });
    for (const [i, j] of [
      [0, 0],
      [m - 1, n - 1],
      [17, 9],
    ] as const) {
      let sum = 2;
      for (let p = 0; p < k; p++) sum += (a[ld + 3 + i * ld + p] as number) * (b[2 * ld + 5 + p * ld + j] as number);
      expect(c[7 + i * ld + j] as number).toBeCloseTo(sum, 4);
    }
    expect(c[7 + m * ld]).toBe(2);
  });

  test("out-of-range operands are refused before C sees them", () => {
    const small = new Float32Array(4);
    expect(() =>
      gemm({
        m: 2,
        n: 2,
        k: 3,
        a: small,
        aOffset: 0,
        lda: 3,
        transA: false,
        b: small,
        bOffset: 0,
        ldb: 2,
        transB: false,
        c: small,
        cOffset: 0,
        ldc: 2,
        accumulate: false,
      }),
    ).toThrow(/exceeds/);
  });
});

describe("OpenBLAS loading", () => {
  test("XLASERVE_BLAS_LIBRARY picks the library, 'none' disables it, a bad path is reported", () => {
    expect(candidatePaths({ XLASERVE_BLAS_LIBRARY: "/opt/blas/libopenblas.so.0" })).toEqual([
      "/opt/blas/libopenblas.so.0",
    ]);
    expect(candidatePaths({ XLASERVE_BLAS_LIBRARY: "none" })).toEqual([]);
    expect(candidatePaths({}).length).toBeGreaterThan(1);
    const missing = loadOpenBlas(["/nonexistent/libopenblas.so.0"]);
    expect(missing.blas).toBeNull();
    expect(missing.failures[0]).toContain("/nonexistent/libopenblas.so.0");
  });

  test("threads default to the cores available, XLASERVE_BLAS_THREADS overrides", () => {
    expect(wantedThreads({ XLASERVE_BLAS_THREADS: "3" })).toBe(3);
    expect(wantedThreads({})).toBeGreaterThanOrEqual(1);
    if (blasStatus().library) expect(blasStatus().threads).toBeGreaterThanOrEqual(1);
  });

  test("the kernel core type follows the CPU's instruction sets", () => {
    expect(coreTypeForFlags(new Set(["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"]))).toBe(
      "SkylakeX",
    );
    expect(coreTypeForFlags(new Set(["avx512f", "avx2", "fma"]))).toBe("Haswell");
    expect(coreTypeForFlags(new Set(["sse4_2"]))).toBeNull();
  });
});

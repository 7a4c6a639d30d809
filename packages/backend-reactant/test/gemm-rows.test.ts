import { describe, expect, test } from "bun:test";
import type { GemmCall } from "../src/blas/gemm-call.ts";
import { SMALL_GEMM_LIMIT, smallGemm } from "../src/blas/small-gemm.ts";

/**
 * Batch invariance at the GEMM level: the loop computes each row of C from that row of A alone,
 * in the same order whatever the number of rows, so a row's bits do not depend on the batch it
 * was coalesced into. (OpenBLAS gives no such promise; see apps/worker/README.md, batch
 * invariance, for where the engine switches between the two.)
 */
function call(m: number, n: number, k: number, a: Float32Array, b: Float32Array): Float32Array {
  const c = new Float32Array(m * n);
  const g: GemmCall = {
    m,
    n,
    k,
    a,
    aOffset: 0,
    lda: k,
    transA: false,
    b,
    bOffset: 0,
    ldb: n,
    transB: false,
    c,
    cOffset: 0,
    ldc: n,
    accumulate: false,
  };
  smallGemm(g);
  return c;
}

describe("GEMM rows", () => {
  test("the loop gives every row the same bits at any number of rows", () => {
    for (const [n, k] of [
      [10, 256],
      [7, 33],
      [32, 64],
    ] as const) {
      const b = Float32Array.from({ length: k * n }, (_, i) => Math.sin(i * 12.9898) * 0.5);
      const a = Float32Array.from({ length: 8 * k }, (_, i) => Math.cos(i * 78.233) * 2);
      const eight = call(8, n, k, a, b);
      for (let r = 0; r < 8; r++) {
        const one = call(1, n, k, a.slice(r * k, (r + 1) * k), b);
        expect(new Uint8Array(one.buffer)).toEqual(new Uint8Array(eight.slice(r * n, (r + 1) * n).buffer));
      }
    }
    // The MLP's last layer at b8 is past the loop's limit, so it goes to OpenBLAS there.
    expect(8 * 10 * 256).toBeGreaterThan(SMALL_GEMM_LIMIT);
    expect(1 * 10 * 256).toBeLessThanOrEqual(SMALL_GEMM_LIMIT);
  });
});

import { describe, expect, test } from "bun:test";
import { planGemm } from "../../src/blas/index.ts";
import { smallGemm } from "../../src/blas/small-gemm.ts";
import { randomFloats, rng } from "./helpers.ts";

/**
 * The small GEMM's definition: per element, the first product, then each later product added
 * in k order, every product and every sum rounded to the precision.
 */
function reference(
  m: number,
  n: number,
  k: number,
  a: Float32Array | Float64Array,
  transA: boolean,
  b: Float32Array | Float64Array,
  transB: boolean,
  f32: boolean,
): Float64Array {
  const round = f32 ? Math.fround : (x: number) => x;
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let p = 0; p < k; p++) {
        const x = round((a[transA ? p * m + i : i * k + p] as number) * (b[transB ? j * k + p : p * n + j] as number));
        acc = p === 0 ? x : round(acc + x);
      }
      out[i * n + j] = acc;
    }
  return out;
}

/** Equal values with signed zeros told apart; any NaN matches any NaN (its sign is not compared). */
function expectSame(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < actual.length; i++) {
    const x = actual[i] as number;
    const y = expected[i] as number;
    if (!(Number.isNaN(x) && Number.isNaN(y)) && !Object.is(x, y)) {
      throw new Error(`element ${i}: got ${x}, expected ${y}`);
    }
  }
}

describe("small GEMM", () => {
  test("the blocked loop and the loop compiled per shape give the definition's bits", () => {
    const next = rng(21);
    for (const f32 of [true, false]) {
      // Widths below, at and above one block (12) and the 8-wide blocks' remainders.
      for (const [m, n, k] of [
        [1, 10, 256],
        [1, 1, 7],
        [3, 12, 9],
        [2, 13, 5],
        [4, 16, 16],
        [1, 27, 30],
        [5, 40, 3],
      ] as [number, number, number][]) {
        for (const transA of [false, true]) {
          for (const transB of [false, true]) {
            const a = randomFloats(next, m * k, f32, 0.04);
            const b = randomFloats(next, k * n, f32, 0.04);
            const expected = reference(m, n, k, a, transA, b, transB, f32);
            const shape = { m, n, k, lda: transA ? m : k, ldb: transB ? k : n, ldc: n, transA, transB };
            const blocked = f32 ? new Float32Array(m * n) : new Float64Array(m * n);
            smallGemm({ ...shape, a, aOffset: 0, b, bOffset: 0, c: blocked, cOffset: 0, accumulate: false });
            expectSame(blocked, expected);
            const planned = f32 ? new Float32Array(m * n + 3) : new Float64Array(m * n + 3);
            planGemm(shape, f32)(a, 0, b, 0, planned, 3);
            expectSame(planned.subarray(3), expected);
          }
        }
      }
    }
  });

  test("a planned GEMM refuses operands that do not fit, like gemm", () => {
    const run = planGemm({ m: 2, n: 2, k: 2, lda: 2, ldb: 2, ldc: 2, transA: false, transB: false }, true);
    expect(() => run(new Float32Array(3), 0, new Float32Array(4), 0, new Float32Array(4), 0)).toThrow(/exceeds/);
    const c = new Float32Array(4);
    run(new Float32Array([1, 2, 3, 4]), 0, new Float32Array([1, 0, 0, 1]), 0, c, 0);
    expect(Array.from(c)).toEqual([1, 2, 3, 4]);
  });
});

import { describe, expect, test } from "bun:test";
import type { NDArray } from "../../src/array.ts";
import { SMALL_GEMM_LIMIT } from "../../src/blas/small-gemm.ts";
import { dotGeneralFor } from "../../src/kernels/heavy/dot-general.ts";
import { dotGeneral } from "../../src/kernels/heavy/index.ts";
import { inPlaceView, orientation } from "../../src/kernels/heavy/gemm-layout.ts";
import { permuteData } from "../../src/kernels/heavy/permute.ts";
import { rng } from "./helpers.ts";

/** An operand permuted into [batch..., first..., second...] (what the GEMM read before in-place views). */
function canonical(a: NDArray, perm: number[]): NDArray {
  return {
    type: a.type,
    shape: perm.map((d) => a.shape[d] as number),
    data: permuteData(a.data, a.shape, perm, 1),
  };
}

/** Values whose products and sums round (so a changed summation would show in the bits). */
const f32 = (shape: number[], seed: number): NDArray => {
  const next = rng(seed);
  const data = new Float32Array(shape.reduce((p, s) => p * s, 1));
  for (let i = 0; i < data.length; i++) data[i] = (next() * 2 - 1) * 1.7;
  return { type: "f32", shape, data };
};

/** Attention's products and their transposes: [batch, seq, heads, dim] operands read per head. */
const CASES: { name: string; lhs: number[]; rhs: number[]; lb: number[]; rb: number[]; lc: number[]; rc: number[] }[] =
  [
    { name: "scores, BLAS size", lhs: [2, 32, 4, 16], rhs: [2, 32, 4, 16], lb: [0, 2], rb: [0, 2], lc: [3], rc: [3] },
    { name: "scores, small loop", lhs: [2, 17, 4, 16], rhs: [2, 17, 4, 16], lb: [0, 2], rb: [0, 2], lc: [3], rc: [3] },
    { name: "values", lhs: [2, 32, 4, 16], rhs: [2, 4, 32, 32], lb: [0, 2], rb: [0, 1], lc: [1], rc: [3] },
    { name: "values, small loop", lhs: [2, 16, 4, 16], rhs: [2, 4, 16, 16], lb: [0, 2], rb: [0, 1], lc: [1], rc: [3] },
    { name: "batch last", lhs: [8, 12, 3], rhs: [12, 5, 3], lb: [2], rb: [2], lc: [1], rc: [0] },
    { name: "two contracting axes", lhs: [3, 4, 5, 6], rhs: [4, 5, 6, 7], lb: [], rb: [], lc: [1, 2], rc: [0, 1] },
  ];

describe("dot_general reads permuted operands in place", () => {
  for (const c of CASES) {
    test(`${c.name}: the bits of the permuted copy's GEMM`, () => {
      const lhs = f32(c.lhs, 1);
      const rhs = f32(c.rhs, 2);
      const dims = { lhsBatch: c.lb, rhsBatch: c.rb, lhsContracting: c.lc, rhsContracting: c.rc };
      const got = dotGeneral(lhs, rhs, dims);
      const free = (rank: number, used: number[]) => [...Array(rank).keys()].filter((a) => !used.includes(a));
      const lf = free(c.lhs.length, [...c.lb, ...c.lc]);
      const rf = free(c.rhs.length, [...c.rb, ...c.rc]);
      // The sides the engine permuted before (orientation), permuted here; the others as given.
      const nb = c.lb.length;
      const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
      const permuteLhs = orientation(c.lb, lf, c.lc).permute !== null;
      const permuteRhs = orientation(c.rb, c.rc, rf).permute !== null;
      const want = dotGeneral(
        permuteLhs ? canonical(lhs, [...c.lb, ...lf, ...c.lc]) : lhs,
        permuteRhs ? canonical(rhs, [...c.rb, ...c.rc, ...rf]) : rhs,
        {
          lhsBatch: permuteLhs ? range(0, nb) : c.lb,
          rhsBatch: permuteRhs ? range(0, nb) : c.rb,
          lhsContracting: permuteLhs ? range(nb + lf.length, c.lc.length) : c.lc,
          rhsContracting: permuteRhs ? range(nb, c.rc.length) : c.rc,
        },
      );
      expect(got.shape).toEqual(want.shape);
      expect(Array.from(got.data as Float32Array)).toEqual(Array.from(want.data as Float32Array));
    });
  }

  test("an op's permuted operand storage is reused across calls without keeping old values", () => {
    const dims = { lhsBatch: [0, 2], rhsBatch: [0, 2], lhsContracting: [3], rhsContracting: [3] };
    const op = dotGeneralFor(dims);
    const alloc = (n: number) => new Float32Array(n);
    const q = f32([2, 32, 4, 16], 5);
    for (const seed of [6, 7, 8]) {
      const k = f32([2, 32, 4, 16], seed);
      const got = op(q, k, "f32", alloc);
      expect(Array.from(got.data as Float32Array)).toEqual(Array.from(dotGeneral(q, k, dims).data as Float32Array));
    }
  });

  test("views: offsets per batch, the row stride, and which layouts are refused", () => {
    // q[b, s, h, d] per (b, h): rows s 64 apart, contracting d innermost.
    const q = inPlaceView([2, 32, 4, 16], [0, 2], [1], [3], false);
    expect(q?.ld).toBe(64);
    expect(q?.transposed).toBe(false);
    expect(Array.from(q?.offsets ?? [])).toEqual([0, 16, 32, 48, 2048, 2064, 2080, 2096]);
    // k[b, t, h, d] as [d, t] matrices is stored transposed: only for the small loops.
    expect(inPlaceView([2, 32, 4, 16], [0, 2], [3], [1], false)).toBeNull();
    expect(inPlaceView([2, 32, 4, 16], [0, 2], [3], [1], true)?.transposed).toBe(true);
    // A group that does not flatten to one stride.
    expect(inPlaceView([4, 5, 6], [], [0, 2], [1], true)).toBeNull();
    expect(SMALL_GEMM_LIMIT).toBeGreaterThan(17 * 17 * 16);
  });
});

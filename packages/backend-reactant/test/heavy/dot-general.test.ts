import { describe, expect, test } from "bun:test";
import { f16BitsToNumber, isXlaserveError, numberToF16Bits } from "@xlaserve/core";
import type { NDArray } from "../../src/array.ts";
import { setForceFallbackGemm } from "../../src/blas/index.ts";
import { dotGeneralFor } from "../../src/kernels/heavy/dot-general.ts";
import { type DotDimensionNumbers, dotGeneral } from "../../src/kernels/heavy/index.ts";
import {
  array,
  count,
  expectClose,
  forEachIndex,
  offsetOf,
  randInt,
  randomF32,
  randomF64,
  rng,
  shuffle,
} from "./helpers.ts";

/** The spec's definition, one output element at a time, in f64. */
function naiveDot(lhs: NDArray, rhs: NDArray, d: DotDimensionNumbers): { shape: number[]; data: Float64Array } {
  const free = (rank: number, used: readonly number[]) => [...Array(rank).keys()].filter((a) => !used.includes(a));
  const lf = free(lhs.shape.length, [...d.lhsBatch, ...d.lhsContracting]);
  const rf = free(rhs.shape.length, [...d.rhsBatch, ...d.rhsContracting]);
  const shape = [
    ...d.lhsBatch.map((a) => lhs.shape[a] as number),
    ...lf.map((a) => lhs.shape[a] as number),
    ...rf.map((a) => rhs.shape[a] as number),
  ];
  const contractShape = d.lhsContracting.map((a) => lhs.shape[a] as number);
  const out = new Float64Array(count(shape));
  const li = new Array<number>(lhs.shape.length).fill(0);
  const ri = new Array<number>(rhs.shape.length).fill(0);
  forEachIndex(shape, (oi, linear) => {
    let p = 0;
    d.lhsBatch.forEach((a, i) => {
      li[a] = oi[p] as number;
      ri[d.rhsBatch[i] as number] = oi[p++] as number;
    });
    for (const a of lf) li[a] = oi[p++] as number;
    for (const a of rf) ri[a] = oi[p++] as number;
    let sum = 0;
    forEachIndex(contractShape, (ci) => {
      d.lhsContracting.forEach((a, i) => {
        li[a] = ci[i] as number;
        ri[d.rhsContracting[i] as number] = ci[i] as number;
      });
      sum += (lhs.data[offsetOf(lhs.shape, li)] as number) * (rhs.data[offsetOf(rhs.shape, ri)] as number);
    });
    out[linear] = sum;
  });
  return { shape, data: out };
}

function randomDot(seed: number, f64 = false): { lhs: NDArray; rhs: NDArray; dims: DotDimensionNumbers } {
  const next = rng(seed);
  const nb = randInt(next, 0, 2);
  const nc = randInt(next, 0, 2);
  const nlf = randInt(next, 0, 2);
  const nrf = randInt(next, 0, 2);
  const batch = Array.from({ length: nb }, () => randInt(next, 1, 3));
  const contract = Array.from({ length: nc }, () => randInt(next, 1, 5));
  const lAxes = shuffle(next, [...Array(nb + nc + nlf).keys()]);
  const rAxes = shuffle(next, [...Array(nb + nc + nrf).keys()]);
  const lShape = new Array<number>(lAxes.length).fill(0);
  const rShape = new Array<number>(rAxes.length).fill(0);
  batch.forEach((s, i) => {
    lShape[lAxes[i] as number] = s;
    rShape[rAxes[i] as number] = s;
  });
  contract.forEach((s, i) => {
    lShape[lAxes[nb + i] as number] = s;
    rShape[rAxes[nb + i] as number] = s;
  });
  for (let i = nb + nc; i < lAxes.length; i++) lShape[lAxes[i] as number] = randInt(next, 1, 4);
  for (let i = nb + nc; i < rAxes.length; i++) rShape[rAxes[i] as number] = randInt(next, 1, 4);
  const dims = {
    lhsBatch: lAxes.slice(0, nb),
    rhsBatch: rAxes.slice(0, nb),
    lhsContracting: lAxes.slice(nb, nb + nc),
    rhsContracting: rAxes.slice(nb, nb + nc),
  };
  const make = f64 ? randomF64 : randomF32;
  return { lhs: make(next, lShape), rhs: make(next, rShape), dims };
}

describe("dot_general", () => {
  test("matches the naive definition for 200 random dimension layouts (f32 and f64)", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { lhs, rhs, dims } = randomDot(seed, seed % 2 === 0);
      const expected = naiveDot(lhs, rhs, dims);
      const actual = dotGeneral(lhs, rhs, dims);
      expect(actual.shape).toEqual(expected.shape);
      expectClose(actual.data as Float32Array, expected.data, 1e-5);
    }
  });

  test("x @ W^T uses the stored layout and agrees with the fallback GEMM on a larger product", () => {
    const next = rng(99);
    const x = randomF32(next, [37, 70]);
    const w = randomF32(next, [53, 70]);
    const dims = { lhsBatch: [], rhsBatch: [], lhsContracting: [1], rhsContracting: [1] };
    const withBlas = dotGeneral(x, w, dims);
    setForceFallbackGemm(true);
    try {
      const fallback = dotGeneral(x, w, dims);
      expectClose(fallback.data as Float32Array, withBlas.data as Float32Array, 1e-5);
    } finally {
      setForceFallbackGemm(false);
    }
    expectClose(withBlas.data as Float32Array, naiveDot(x, w, dims).data, 1e-5);
  });

  const matmul = { lhsBatch: [], rhsBatch: [], lhsContracting: [1], rhsContracting: [0] };

  test("narrow integers through the float GEMM equal the exact integer sums (f32 and f64 paths)", () => {
    const cases: {
      lhs: "i8" | "ui8" | "i16" | "ui16";
      rhs: "i8" | "ui8" | "i16" | "ui16";
      k: number;
      out: "i32" | "i64" | "i16";
    }[] = [
      { lhs: "i8", rhs: "i8", k: 1024, out: "i32" }, // 128 * 128 * 1024 = 2^24: the f32 path's limit
      { lhs: "ui8", rhs: "i8", k: 700, out: "i32" }, // past it: f64
      { lhs: "i16", rhs: "ui16", k: 300, out: "i64" },
      { lhs: "i8", rhs: "i8", k: 64, out: "i16" }, // a narrower result wraps
    ];
    const range = { i8: [-128, 127], ui8: [0, 255], i16: [-32768, 32767], ui16: [0, 65535] } as const;
    const next = rng(17);
    for (const c of cases) {
      const m = 3;
      const n = 5;
      const fill = (t: keyof typeof range, count: number) =>
        Array.from({ length: count }, (_, i): number =>
          i % 7 === 0 ? (range[t][(i >> 3) % 2] as number) : randInt(next, range[t][0], range[t][1]),
        );
      const a = fill(c.lhs, m * c.k);
      const b = fill(c.rhs, c.k * n);
      const got = dotGeneral(array(c.lhs, [m, c.k], a), array(c.rhs, [c.k, n], b), matmul, c.out);
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          let sum = 0n;
          for (let kk = 0; kk < c.k; kk++) sum += BigInt(a[i * c.k + kk] as number) * BigInt(b[kk * n + j] as number);
          const want = c.out === "i64" ? sum : c.out === "i32" ? BigInt.asIntN(32, sum) : BigInt.asIntN(16, sum);
          expect(BigInt(got.data[i * n + j] as number | bigint)).toBe(want);
        }
      }
    }
  });

  test("integers wrap around in the result type", () => {
    const lhs = array("i32", [1, 2], [0x40000000, 3]);
    const rhs = array("i32", [2, 1], [4, 5]);
    // 2^30 * 4 = 2^32 wraps to 0; plus 15.
    expect(Array.from(dotGeneral(lhs, rhs, matmul).data as Int32Array)).toEqual([15]);
    const u8 = dotGeneral(array("ui8", [1, 1], [200]), array("ui8", [1, 1], [2]), matmul);
    expect(Array.from(u8.data as Uint8Array)).toEqual([144]);
    const widened = dotGeneral(array("i8", [1, 2], [-100, 100]), array("i8", [2, 1], [100, 100]), matmul, "i32");
    expect(Array.from(widened.data as Int32Array)).toEqual([0]);
    const i64 = dotGeneral(array("i64", [1, 1], [2n ** 62n]), array("i64", [1, 1], [4n]), matmul);
    expect(Array.from(i64.data as BigInt64Array)).toEqual([0n]);
    const big = dotGeneral(array("i64", [1, 2], [3000000000n, 1n]), array("i64", [2, 1], [3000000000n, 7n]), matmul);
    expect(Array.from(big.data as BigInt64Array)).toEqual([9000000000000000007n]);
  });

  test("i1 uses AND and OR", () => {
    const out = dotGeneral(array("i1", [2, 2], [1, 0, 0, 0]), array("i1", [2, 2], [0, 1, 1, 1]), matmul);
    expect(Array.from(out.data as Uint8Array)).toEqual([0, 1, 0, 0]);
  });

  test("f16 computes in f32 and rounds once to nearest even", () => {
    const bits = (xs: number[]) => xs.map(numberToF16Bits);
    const lhs = array("f16", [1, 2], bits([1, 2 ** -11]));
    const rhs = array("f16", [2, 1], bits([1, 1]));
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even wins, so 1.
    expect(f16BitsToNumber(dotGeneral(lhs, rhs, matmul).data[0] as number)).toBe(1);
    const result = dotGeneral(array("f16", [1, 1], bits([3])), array("f16", [1, 1], bits([0.5])), matmul, "f32");
    expect(result.type).toBe("f32");
    expect(Array.from(result.data as Float32Array)).toEqual([1.5]);
  });

  test("complex products", () => {
    // [1+2i, 3] . [i, 1-i] = (i - 2) + (3 - 3i) = 1 - 2i
    const out = dotGeneral(array("c64", [2], [1, 2, 3, 0]), array("c64", [2], [0, 1, 1, -1]), {
      lhsBatch: [],
      rhsBatch: [],
      lhsContracting: [0],
      rhsContracting: [0],
    });
    expect(Array.from(out.data as Float32Array)).toEqual([1, -2]);
  });

  test("an op's plan, kept between calls, follows operands whose shapes change", () => {
    const dims: DotDimensionNumbers = { lhsBatch: [0], rhsBatch: [0], lhsContracting: [2], rhsContracting: [1] };
    const dot = dotGeneralFor(dims);
    const alloc = (count: number, f64: boolean) => (f64 ? new Float64Array(count) : new Float32Array(count));
    const next = rng(5);
    for (const [b, m, k, n] of [
      [2, 3, 4, 5],
      [2, 3, 4, 5],
      [1, 16, 16, 16],
      [3, 1, 300, 40],
      [2, 3, 4, 5],
    ] as [number, number, number, number][]) {
      const lhs = randomF32(next, [b, m, k]);
      const rhs = randomF32(next, [b, k, n]);
      const planned = dot(lhs, rhs, "f32", alloc);
      const fresh = dotGeneral(lhs, rhs, dims);
      expect(planned.shape).toEqual([b, m, n]);
      expect(Array.from(planned.data as Float32Array)).toEqual(Array.from(fresh.data as Float32Array));
    }
    let caught: unknown;
    try {
      dot(randomF32(next, [2, 3, 4]), randomF32(next, [2, 5, 4]), "f32", alloc);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });

  test("mismatched dimensions raise INVALID_ARGUMENT", () => {
    let caught: unknown;
    try {
      dotGeneral(randomF32(rng(1), [2, 3]), randomF32(rng(2), [4, 2]), matmul);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

import { describe, expect, test } from "bun:test";
import { BF16_TO_NUMBER, F16_TO_NUMBER, encodeBf16, encodeF16 } from "@xlaserve/stablehlo/float16.ts";
import type { NDArray, RegionInfo } from "../src/array.ts";
import { dotGeneralFor } from "../src/kernels/heavy/dot-general.ts";
import { reduceFor } from "../src/kernels/reduce.ts";

/** Half-precision bits with NaN, infinities and both zeros among ordinary values. */
function halfBits(n: number, type: "bf16" | "f16", seed = 7): Uint16Array {
  const special =
    type === "bf16"
      ? [0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x3f80]
      : [0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3c00];
  const encode = type === "bf16" ? encodeBf16 : encodeF16;
  let s = seed;
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = i % 11 === 0 ? (special[(s >>> 8) % special.length] as number) : encode((s / 2 ** 32 - 0.5) * 8);
  }
  return out;
}

/** The reduce's reference: a row folded in index order with Math's max / min, rounding each sum. */
function referenceRows(
  type: "bf16" | "f16",
  bits: Uint16Array,
  rows: number,
  kind: "add" | "max" | "min",
  init: number,
) {
  const decode = type === "bf16" ? BF16_TO_NUMBER : F16_TO_NUMBER;
  const encode = type === "bf16" ? encodeBf16 : encodeF16;
  const len = bits.length / rows;
  const out: number[] = [];
  for (let k = 0; k < rows; k++) {
    let acc = decode[init] as number;
    for (let r = 0; r < len; r++) {
      const v = decode[bits[k * len + r] as number] as number;
      acc = kind === "add" ? (decode[encode(acc + v)] as number) : kind === "max" ? Math.max(acc, v) : Math.min(acc, v);
    }
    out.push(encode(acc));
  }
  return out;
}

describe("bf16 / f16 row reductions", () => {
  for (const type of ["bf16", "f16"] as const)
    for (const kind of ["add", "max", "min"] as const)
      test(`${type} ${kind} over the minor axis equals the index-order fold`, () => {
        const bits = halfBits(12 * 40, type);
        const init =
          kind === "add" ? 0 : type === "bf16" ? (kind === "max" ? 0xff80 : 0x7f80) : kind === "max" ? 0xfc00 : 0x7c00;
        const x: NDArray = { type, shape: [3, 4, 40], data: bits };
        const initArray: NDArray = { type, shape: [], data: new Uint16Array([init]) };
        const [out] = reduceFor([2])([x], [initArray], { reducer: kind } as RegionInfo, (_t, n) => new Uint16Array(n));
        expect(Array.from((out as NDArray).data as Uint16Array)).toEqual(referenceRows(type, bits, 12, kind, init));
      });
});

describe("bf16 dot_general", () => {
  const dims = { lhsBatch: [], rhsBatch: [], lhsContracting: [1], rhsContracting: [0] };
  const f32Output = (n: number, f64: boolean) => (f64 ? new Float64Array(n) : new Float32Array(n));

  test("a weight widened once is widened again when its storage's version changes", () => {
    const lhs: NDArray = { type: "bf16", shape: [4, 8], data: halfBits(32, "bf16", 3).map((b) => b & 0x7f7f) };
    const weights = new Uint16Array(8 * 5).fill(0x3f80); // 1.0
    const rhs: NDArray = { type: "bf16", shape: [8, 5], data: weights };
    const dot = dotGeneralFor(dims);
    let version = 1;
    const versionOf = (data: NDArray["data"]) => (data === weights ? version : 0);
    const first = Array.from(dot(lhs, rhs, "bf16", f32Output, versionOf).data as Uint16Array);
    weights.fill(0x4000); // 2.0, written in place as a pooled buffer would be
    const stale = Array.from(dot(lhs, rhs, "bf16", f32Output, versionOf).data as Uint16Array);
    expect(stale).toEqual(first); // same version: the kept widening is what the op promised to use
    version++;
    const fresh = Array.from(dot(lhs, rhs, "bf16", f32Output, versionOf).data as Uint16Array);
    const unkept = Array.from(dotGeneralFor(dims)(lhs, rhs, "bf16", f32Output).data as Uint16Array);
    expect(fresh).toEqual(unkept);
    expect(fresh).not.toEqual(first);
  });

  test("the result is the f32 product rounded once to bf16", () => {
    // Small integers: every product and partial sum is exact in f32, so any GEMM order agrees,
    // and sums past 256 need the final rounding to bf16's 8 bits.
    const ints = (n: number, seed: number) =>
      Uint16Array.from({ length: n }, (_, i) => encodeBf16(((i * seed) % 61) - 30));
    const a = ints(6 * 16, 7);
    const b = ints(16 * 3, 13);
    const out = dotGeneralFor(dims)(
      { type: "bf16", shape: [6, 16], data: a },
      { type: "bf16", shape: [16, 3], data: b },
      "bf16",
      f32Output,
      () => 0,
      (_t, n) => new Uint16Array(n),
    ).data as Uint16Array;
    for (let i = 0; i < 6; i++)
      for (let j = 0; j < 3; j++) {
        let sum = 0;
        for (let k = 0; k < 16; k++)
          sum +=
            (BF16_TO_NUMBER[a[i * 16 + k] as number] as number) * (BF16_TO_NUMBER[b[k * 3 + j] as number] as number);
        expect(out[i * 3 + j]).toBe(encodeBf16(Math.fround(sum)));
      }
  });
});

import { expect, test } from "bun:test";
import { bf16BitsToNumber, f16BitsToNumber, numberToBf16Bits, numberToF16Bits } from "@xlaserve/core";
import { encodeBf16, encodeF16, roundBf16, roundF16 } from "@xlaserve/stablehlo/float16.ts";
import * as fast from "../src/elem/half-bits.ts";

/** The heavy kernels' table-and-direct-rounding converters give core's converters' exact bits. */
test("f16 / bf16 fast converters equal core's on every pattern and on random f64 values", () => {
  const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
  for (let bits = 0; bits < 65536; bits++) {
    expect(same(fast.f16BitsToNumber(bits), f16BitsToNumber(bits))).toBe(true);
    expect(same(fast.bf16BitsToNumber(bits), bf16BitsToNumber(bits))).toBe(true);
  }
  const f64 = new Float64Array(1);
  const words = new Uint32Array(f64.buffer);
  let seed = 1;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed;
  };
  let mismatches = 0;
  for (let i = 0; i < 200_000; i++) {
    // Exponents around f16's and bf16's ranges, subnormals and overflow included.
    words[0] = next();
    words[1] = (next() & 0x800fffff) | ((1023 - 40 + (next() % 80)) << 20);
    const v = i % 3 === 0 ? Math.fround(f64[0] as number) : (f64[0] as number);
    if (fast.numberToF16Bits(v) !== numberToF16Bits(v)) mismatches++;
    if (fast.numberToBf16Bits(v) !== numberToBf16Bits(v)) mismatches++;
  }
  const edges = [
    0,
    -0,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    Number.NaN,
    -Number.NaN,
    65504,
    65519.99,
    65520,
    5.96e-8,
    2.98e-8,
    3.4e38,
    3.39e38,
    1e39,
  ];
  for (const v of edges) {
    if (fast.numberToF16Bits(v) !== numberToF16Bits(v)) mismatches++;
    if (fast.numberToBf16Bits(v) !== numberToBf16Bits(v)) mismatches++;
  }
  expect(mismatches).toBe(0);
});

test("rounding through f32 on the bits equals direct rounding from f64, midpoints included", () => {
  const f64 = new Float64Array(1);
  const words = new Uint32Array(f64.buffer);
  let seed = 9;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed;
  };
  const f32 = new Float32Array(1);
  const f32bits = new Uint32Array(f32.buffer);
  let mismatches = 0;
  const check = (v: number) => {
    if (fast.fastEncodeBf16(v) !== encodeBf16(v)) mismatches++;
    if (fast.fastEncodeF16(v) !== encodeF16(v)) mismatches++;
    if (!Object.is(fast.fastRoundBf16(v), roundBf16(v)) && !Number.isNaN(v)) mismatches++;
    if (!Object.is(fast.fastRoundF16(v), roundF16(v)) && !Number.isNaN(v)) mismatches++;
  };
  for (let i = 0; i < 200_000; i++) {
    words[0] = next();
    words[1] = (next() & 0x800fffff) | ((1023 - 140 + (next() % 280)) << 20);
    const v = f64[0] as number;
    check(v);
    check(Math.fround(v));
    // Values just beside a bf16 / f16 midpoint: exactly on it in f32, a hair off in f64.
    f32[0] = v;
    f32bits[0] = (f32bits[0] as number & 0xffff0000) | 0x8000;
    const mid = f32[0] as number;
    check(mid);
    check(mid * (1 + 2 ** -40));
    check(mid * (1 - 2 ** -40));
    f32bits[0] = (f32bits[0] as number & 0xffffe000) | 0x1000;
    const mid16 = f32[0] as number;
    check(mid16);
    check(mid16 * (1 + 2 ** -40));
    check(mid16 * (1 - 2 ** -40));
  }
  for (const v of [
    0,
    -0,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    65504,
    65519.99,
    65520,
    6.1e-5,
    6.09e-5,
    2 ** -14,
    2 ** -24,
    3.4e38,
    1e39,
  ])
    check(v);
  expect(mismatches).toBe(0);
});

test("the splitting round equals direct rounding on every exact midpoint, beside it, and in subnormals", () => {
  const tables: [(bits: number) => number, (x: number) => number, (x: number) => number][] = [
    [f16BitsToNumber, fast.fastRoundF16, roundF16],
    [bf16BitsToNumber, fast.fastRoundBf16, roundBf16],
  ];
  let mismatches = 0;
  let checked = 0;
  for (const [decode, fastRound, direct] of tables) {
    const check = (x: number) => {
      checked++;
      const a = fastRound(x);
      const b = direct(x);
      if (!Object.is(a, b) && !(Number.isNaN(a) && Number.isNaN(b))) mismatches++;
    };
    // Positive patterns in order: neighbours share a sign and their midpoints are exact in f64
    // (products of two narrow values, as a fused chain computes them, land on them often).
    for (let bits = 0; bits < 0x7fff; bits++) {
      const lo = decode(bits);
      const hi = decode(bits + 1);
      if (!Number.isFinite(hi)) continue;
      const mid = (lo + hi) / 2;
      for (const x of [lo, mid, mid * (1 + 2 ** -52), mid * (1 - 2 ** -52), lo + (hi - lo) * 0.3]) {
        check(x);
        check(-x);
      }
    }
    for (const x of [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e300, -1e300, 5e-324])
      check(x);
  }
  expect(checked).toBeGreaterThan(300_000);
  expect(mismatches).toBe(0);
});

/**
 * f16 / bf16 storage to and from numbers for the heavy kernels' conversions (dot_general and
 * convolution operands and results, reducers, region arguments), with exactly the results of
 * core's converters but without their BigInt and Math.pow work per element: decoding through
 * 64 Ki-entry tables, encoding with the engine's direct rounding. NaNs (rare) take core's path,
 * which keeps their sign. bf16 rounds through f32 first, as core's numberToBf16Bits does.
 */
import { numberToBf16Bits as slowBf16, numberToF16Bits as slowF16 } from "@xlaserve/core";
import { BF16_TO_NUMBER, F16_TO_NUMBER, encodeBf16, encodeF16 } from "@xlaserve/stablehlo/float16.ts";

export function f16BitsToNumber(bits: number): number {
  return F16_TO_NUMBER[bits & 0xffff] as number;
}

export function bf16BitsToNumber(bits: number): number {
  return BF16_TO_NUMBER[bits & 0xffff] as number;
}

export function numberToF16Bits(value: number): number {
  return Number.isNaN(value) ? slowF16(value) : encodeF16(value);
}

export function numberToBf16Bits(value: number): number {
  return Number.isNaN(value) ? slowBf16(value) : encodeBf16(Math.fround(value));
}

const F = new Float32Array(1);
const U = new Uint32Array(F.buffer);

/**
 * bf16 bits of x rounded to nearest even, equal to encodeBf16's direct rounding from f64: x is
 * rounded to f32 (native), then to bf16 on the bits. Rounding twice can differ from rounding once
 * only where the f32 value is exactly a bf16 midpoint that x itself was not; that case, and NaN
 * and infinities, take encodeBf16.
 */
export function fastEncodeBf16(x: number): number {
  F[0] = x;
  const u = U[0] as number;
  if ((u & 0x7f800000) === 0x7f800000 || ((u & 0xffff) === 0x8000 && F[0] !== x)) return encodeBf16(x);
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Above these magnitudes a value rounds to infinity (the midpoint past the largest finite one). */
const BF16_OVERFLOW = (2 - 2 ** -8) * 2 ** 127;
const F16_OVERFLOW = 65520;
const BF16_MIN_NORMAL = 2 ** -126;
const F16_MIN_NORMAL = 2 ** -14;
/** Adding and subtracting 1.5 * 2^(52 + q) rounds to a multiple of 2^q, ties to even. */
const BF16_SUBNORMAL_SHIFT = 1.5 * 2 ** (52 - 133);
const F16_SUBNORMAL_SHIFT = 1.5 * 2 ** (52 - 24);

/**
 * The nearest value with `keep` significant bits (ties to even) by Veltkamp's splitting,
 * c = x (2^(53-keep) + 1), then c - (c - x): three f64 operations and no memory
 * traffic, where the bit form needs a store and a load through a scratch array (twice the cost
 * inside a fused chain that rounds after every op). Exact for every finite x whose product does
 * not overflow; the callers keep x to their type's normal range (tested against encodeIeee over
 * every midpoint of both types).
 */
function splitRound(x: number, minNormal: number, overflow: number, factor: number, shift: number): number {
  const a = Math.abs(x);
  if (a >= minNormal) {
    if (a < overflow) {
      const c = x * factor;
      return c - (c - x);
    }
    return x > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }
  // Subnormal, zero or NaN: a fixed quantum; a result of zero keeps x's sign.
  const r = x + shift - shift;
  return r === 0 ? x * 0 : r;
}

/** The bf16 value nearest x (ties to even) as a number, equal to roundBf16. */
export function fastRoundBf16(x: number): number {
  return splitRound(x, BF16_MIN_NORMAL, BF16_OVERFLOW, 2 ** 45 + 1, BF16_SUBNORMAL_SHIFT);
}

/**
 * f16 bits of x rounded to nearest even, equal to encodeF16: through f32 as above for results
 * in f16's normal range (f32 exponents 113..142); subnormals, overflow, NaN and the midpoint case
 * take encodeF16.
 */
export function fastEncodeF16(x: number): number {
  F[0] = x;
  const u = U[0] as number;
  const e = (u >>> 23) & 0xff;
  if (e < 113 || e > 142 || ((u & 0x1fff) === 0x1000 && F[0] !== x)) return encodeF16(x);
  const r = (u & 0x7fffffff) + 0xfff + ((u >>> 13) & 1);
  return ((u >>> 16) & 0x8000) | ((r >>> 13) - (112 << 10));
}

/** The f16 value nearest x (ties to even) as a number, equal to roundF16. */
export function fastRoundF16(x: number): number {
  return splitRound(x, F16_MIN_NORMAL, F16_OVERFLOW, 2 ** 42 + 1, F16_SUBNORMAL_SHIFT);
}

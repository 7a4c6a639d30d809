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

/** The bf16 value nearest x (ties to even) as a number: roundBf16 without its table lookup. */
export function fastRoundBf16(x: number): number {
  F[0] = x;
  const u = U[0] as number;
  if ((u & 0x7f800000) === 0x7f800000 || ((u & 0xffff) === 0x8000 && F[0] !== x)) {
    return BF16_TO_NUMBER[encodeBf16(x)] as number;
  }
  U[0] = (u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000;
  return F[0] as number;
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

export function fastRoundF16(x: number): number {
  return F16_TO_NUMBER[fastEncodeF16(x)] as number;
}

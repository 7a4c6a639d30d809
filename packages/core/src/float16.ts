/**
 * Lossless-where-possible conversion between f16 / bf16 bits and JavaScript numbers. Narrowing
 * rounds to nearest, ties to even, as XLA does; NaN stays NaN (quiet), infinities stay infinite.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

export function bf16BitsToNumber(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0] as number;
}

export function numberToBf16Bits(value: number): number {
  f32[0] = value; // f64 -> f32 is itself round-to-nearest-even
  const x = u32[0] as number;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff; // quiet NaN, keep sign
  const lsb = (x >>> 16) & 1;
  return ((x + 0x7fff + lsb) >>> 16) & 0xffff;
}

export function f16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** Rounds directly from the f64 value (no double rounding through f32). */
export function numberToF16Bits(value: number): number {
  f64[0] = value;
  const bits = u64[0] as bigint;
  const sign = Number(bits >> 63n) << 15;
  const exp = Number((bits >> 52n) & 0x7ffn);
  const mant = bits & 0xfffffffffffffn;
  if (exp === 0x7ff) return mant === 0n ? sign | 0x7c00 : sign | 0x7e00;
  const unbiased = exp - 1023;
  if (unbiased > 15) return sign | 0x7c00;
  // Significand with the implicit bit, as an integer scaled by 2^52.
  const full = exp === 0 ? mant : mant | (1n << 52n);
  // Number of low bits to drop so the result is in f16's units: normal numbers keep 10 fraction
  // bits; subnormals (unbiased < -14) keep fewer.
  const e = exp === 0 ? -1022 : unbiased;
  const shift = e < -14 ? 42 + (-14 - e) : 42;
  if (shift > 63) return sign; // far below the smallest subnormal: rounds to zero
  const big = BigInt(shift);
  let q = full >> big;
  const rem = full & ((1n << big) - 1n);
  const half = 1n << (big - 1n);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  if (e < -14) {
    // Subnormal: q counts units of 2^-24 (q may round up to 1024, the smallest normal: same bits).
    return sign | Number(q);
  }
  // Normal: q includes the implicit bit at 2^10; rounding may carry into the exponent.
  let biased = e + 15;
  if (q >= 2048n) {
    q >>= 1n;
    biased += 1;
  }
  if (biased >= 31) return sign | 0x7c00;
  return sign | (biased << 10) | Number(q & 0x3ffn);
}

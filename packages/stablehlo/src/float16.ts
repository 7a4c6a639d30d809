/**
 * Fast f16 / bf16 conversion for hot loops: decoding through 64 Ki-entry tables and encoding
 * straight from f64 with round-to-nearest-even (no double rounding through f32, no BigInt).
 */

export const F16_TO_NUMBER = new Float32Array(65536);
export const BF16_TO_NUMBER = new Float32Array(65536);
{
  const u32 = new Uint32Array(BF16_TO_NUMBER.buffer);
  for (let bits = 0; bits < 65536; bits++) {
    u32[bits] = bits << 16;
    const exp = (bits >>> 10) & 0x1f;
    const frac = bits & 0x3ff;
    const sign = bits & 0x8000 ? -1 : 1;
    F16_TO_NUMBER[bits] =
      exp === 0
        ? sign * frac * 2 ** -24
        : exp === 31
          ? frac === 0
            ? sign * Number.POSITIVE_INFINITY
            : Number.NaN
          : sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
}

const scratch = new Float64Array(1);
const scratchHigh = new Uint32Array(scratch.buffer);
const POW2 = new Float64Array(2100);
for (let e = 0; e < POW2.length; e++) POW2[e] = 2 ** (e - 1050);

/** Round to an integer, ties to even (q >= 0, q < 2^52). */
function roundHalfEven(q: number): number {
  let r = Math.round(q);
  if (r - q === 0.5 && (r & 1) === 1) r -= 1;
  return r;
}

/** Encodes an IEEE-style binary format with `mant` fraction bits and bias, with infinities. */
function encodeIeee(x: number, mant: number, bias: number, nanBits: number, overflow: number): number {
  if (Number.isNaN(x)) return nanBits;
  const signBit = 1 << (mant + (bias === 15 ? 5 : 8));
  let sign = 0;
  if (x < 0 || (x === 0 && 1 / x < 0)) {
    sign = signBit;
    x = -x;
  }
  const infBits = signBit - (1 << mant);
  if (x >= overflow) return sign | infBits;
  const minNormalExp = 1 - bias;
  scratch[0] = x;
  const e = (((scratchHigh[1] as number) >>> 20) & 0x7ff) - 1023;
  if (e < minNormalExp) {
    const r = roundHalfEven(x * (POW2[1050 + mant - minNormalExp] as number));
    return sign | r;
  }
  const r = roundHalfEven(x * (POW2[1050 + mant - e] as number));
  return sign | (((e + bias) << mant) + (r - (1 << mant)));
}

export function encodeF16(x: number): number {
  return encodeIeee(x, 10, 15, 0x7e00, 65520);
}

export function encodeBf16(x: number): number {
  return encodeIeee(x, 7, 127, 0x7fc0, (2 - 2 ** -8) * 2 ** 127);
}

/** The f16 value nearest to x (ties to even), as a number. */
export function roundF16(x: number): number {
  return F16_TO_NUMBER[encodeF16(x)] as number;
}

export function roundBf16(x: number): number {
  return BF16_TO_NUMBER[encodeBf16(x)] as number;
}

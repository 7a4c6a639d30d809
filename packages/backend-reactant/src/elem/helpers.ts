/**
 * Scalar helpers that generated elementwise loops call (passed in by name, see
 * kernels/elementwise.ts). Each follows the StableHLO / XLA semantics noted beside it.
 */
import { expXlaF32, logisticXlaF16, logisticXlaF32, tanhXlaF32 } from "./xla-f32-math.ts";
import {
  besselI1e,
  coshF32,
  digamma,
  sinhF32,
  erf,
  erfInv,
  erfc,
  lgamma,
  nextAfter,
  reducePrecision,
} from "../kernels/special.ts";
import { maxFloat, minFloat, relu } from "./branchless.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { fastEncodeBf16, fastEncodeF16, fastRoundBf16, fastRoundF16 } from "./half-bits.ts";

/** Round half to even for any finite number (round_nearest_even). */
export function roundEven(x: number): number {
  if (!Number.isFinite(x)) return x;
  const r = Math.round(x);
  if (Math.abs(r - x) === 0.5 && r % 2 !== 0) return r - 1;
  return r === 0 ? x * 0 : r; // keep the sign of zero
}

/** round_nearest_afz: halves away from zero. */
export function roundAfz(x: number): number {
  if (!Number.isFinite(x)) return x;
  const r = Math.sign(x) * Math.round(Math.abs(x));
  return r === 0 ? x * 0 : r;
}

/** C pow semantics where JS differs: pow(1, y) = 1 and pow(-1, +-inf) = 1 (IEEE 754 / XLA). */
export function powFloat(a: number, b: number): number {
  if (a === 1 || b === 0) return 1;
  if (a === -1 && (b === Number.POSITIVE_INFINITY || b === Number.NEGATIVE_INFINITY)) return 1;
  return a ** b;
}

/** Integer power by squaring, wrapping in 32 bits; negative exponents as XLA defines them. */
export function powInt(a: number, b: number, unsigned: boolean): number {
  if (!unsigned && b < 0) return a === 1 ? 1 : a === -1 ? (b & 1 ? -1 : 1) : 0;
  let result = 1;
  let base = a | 0;
  let e = unsigned ? b >>> 0 : b;
  while (e > 0) {
    if (e & 1) result = Math.imul(result, base);
    base = Math.imul(base, base);
    e = Math.floor(e / 2);
  }
  return result;
}

export function powBig(a: bigint, b: bigint, unsigned: boolean): bigint {
  if (!unsigned && b < 0n) return a === 1n ? 1n : a === -1n ? (b & 1n ? -1n : 1n) : 0n;
  let result = 1n;
  let base = a;
  let e = b;
  while (e > 0n) {
    if (e & 1n) result = BigInt.asIntN(64, result * base);
    base = BigInt.asIntN(64, base * base);
    e >>= 1n;
  }
  return result;
}

export function popcount32(x: number): number {
  let v = x >>> 0;
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

export function popcountBig(x: bigint): bigint {
  const u = BigInt.asUintN(64, x);
  return BigInt(popcount32(Number(u & 0xffffffffn)) + popcount32(Number(u >> 32n)));
}

export function clzBig(x: bigint): bigint {
  const u = BigInt.asUintN(64, x);
  const high = Number(u >> 32n);
  return BigInt(high !== 0 ? Math.clz32(high) : 32 + Math.clz32(Number(u & 0xffffffffn)));
}

/** Float sign: -1, +1, or the input itself for +-0 and NaN. */
export function signFloat(x: number): number {
  return x > 0 ? 1 : x < 0 ? -1 : x;
}

/** float -> integer convert as XLA does: truncate, NaN -> 0, saturate at the type's bounds. */
export function floatToInt(x: number, min: number, max: number): number {
  if (Number.isNaN(x)) return 0;
  if (x <= min) return min;
  if (x >= max) return max;
  return Math.trunc(x);
}

const I64_MIN = -(2 ** 63);
const I64_MAX = 2 ** 63;
export function floatToBig(x: number, unsigned: boolean): bigint {
  if (Number.isNaN(x)) return 0n;
  if (unsigned) {
    if (x <= 0) return 0n;
    if (x >= 2 ** 64) return 0xffffffffffffffffn;
    return BigInt(Math.trunc(x));
  }
  if (x <= I64_MIN) return -(2n ** 63n);
  if (x >= I64_MAX) return 2n ** 63n - 1n;
  return BigInt(Math.trunc(x));
}

export const HELPERS = {
  tanhF32: tanhXlaF32,
  expF32: expXlaF32,
  logisticF32: logisticXlaF32,
  logisticF16: logisticXlaF16,
  F16: F16_TO_NUMBER,
  BF16: BF16_TO_NUMBER,
  encF16: fastEncodeF16,
  encBf16: fastEncodeBf16,
  rF16: fastRoundF16,
  rBf16: fastRoundBf16,
  fround: Math.fround,
  roundEven,
  roundAfz,
  powFloat,
  powInt,
  powBig,
  popcount32,
  popcountBig,
  clzBig,
  signFloat,
  floatToInt,
  floatToBig,
  lgamma,
  digamma,
  erf,
  erfc,
  erfInv,
  besselI1e,
  nextAfter,
  reducePrecision,
  coshF32,
  sinhF32,
  maxFloat,
  minFloat,
  relu,
};

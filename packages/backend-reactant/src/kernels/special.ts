import { type DD, ddAdd, ddDivNumber, ddFromProduct, ddMul } from "./double-double.ts";

/**
 * Special functions behind the chlo ops JAX emits (lgamma, digamma, erf, erfc, erf_inv,
 * bessel_i1e, next_after), computed in f64; callers round to the element type.
 */

const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

export function lgamma(x: number): number {
  if (Number.isNaN(x)) return x;
  if (!Number.isFinite(x)) return Number.POSITIVE_INFINITY;
  if (x <= 0 && Number.isInteger(x)) return Number.POSITIVE_INFINITY;
  if (x < 0.5) {
    // Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x);
  }
  const z = x - 1;
  let a = LANCZOS[0] as number;
  const t = z + LANCZOS_G + 0.5;
  for (let i = 1; i < LANCZOS.length; i++) a += (LANCZOS[i] as number) / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

export function digamma(x: number): number {
  if (Number.isNaN(x)) return x;
  if (x === Number.POSITIVE_INFINITY) return x;
  if (x === Number.NEGATIVE_INFINITY) return Number.NaN;
  if (x <= 0 && Number.isInteger(x)) return Number.NaN;
  let result = 0;
  if (x < 0) {
    // Reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    result -= Math.PI / Math.tan(Math.PI * x);
    x = 1 - x;
  }
  while (x < 6) {
    result -= 1 / x;
    x += 1;
  }
  const f = 1 / (x * x);
  const series =
    f * (-1 / 12 + f * (1 / 120 + f * (-1 / 252 + f * (1 / 240 + f * (-1 / 132 + f * (691 / 32760 - f / 12))))));
  return result + Math.log(x) - 0.5 / x + series;
}

/** 2/sqrt(pi) as a double-double. */
const TWO_OVER_SQRT_PI: DD = [1.1283791670955126, 1.533545961316588e-17];

/**
 * erf(x) for |x| < 3 from its Taylor series summed in double-double: the alternating terms
 * grow to e^(x^2) times the result, which plain f64 cannot absorb, and this keeps the result
 * correctly rounded. Beyond 3, 1 - erfc(x) with erfc's continued fraction.
 */
function erfSeries(x: number): DD {
  const minusX2: DD = ddFromProduct(-x, x);
  let term: DD = [x, 0];
  let sum: DD = [x, 0];
  for (let n = 1; n < 200; n++) {
    term = ddDivNumber(ddMul(term, minusX2), n);
    const add = ddDivNumber(term, 2 * n + 1);
    sum = ddAdd(sum, add);
    if (Math.abs(add[0]) < 1e-34 * Math.abs(sum[0])) break;
  }
  return ddMul(sum, TWO_OVER_SQRT_PI);
}

export function erf(x: number): number {
  if (Number.isNaN(x)) return x;
  const ax = Math.abs(x);
  if (ax < 3) return erfSeries(x)[0];
  const c = erfcLarge(ax);
  return x > 0 ? 1 - c : c - 1;
}

export function erfc(x: number): number {
  if (Number.isNaN(x)) return x;
  if (x < 0) return 2 - erfc(-x);
  if (x < 3) {
    const e = erfSeries(x);
    return ddAdd([1, 0], [-e[0], -e[1]])[0];
  }
  return erfcLarge(x);
}

/** erfc for x >= 3 by Lentz's continued fraction (converges quickly there). */
function erfcLarge(x: number): number {
  if (x > 27) return 0;
  // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let n = 1; n < 5000; n++) {
    const a = n / 2;
    d = x + a * d;
    d = d === 0 ? tiny : d;
    c = x + a / c;
    c = c === 0 ? tiny : c;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  // exp(-x^2) with x^2 split into hi + lo: the rounding of x*x alone would cost several ULP.
  const [hi, lo] = ddFromProduct(x, x);
  return (Math.exp(-hi) * (1 - lo)) / Math.sqrt(Math.PI) / f;
}

/** Inverse of erf: Giles' approximation refined by Newton steps on erf. */
export function erfInv(y: number): number {
  if (Number.isNaN(y) || y < -1 || y > 1) return Number.NaN;
  if (y === 1) return Number.POSITIVE_INFINITY;
  if (y === -1) return Number.NEGATIVE_INFINITY;
  if (y === 0) return y;
  let w = -Math.log((1 - y) * (1 + y));
  let x: number;
  if (w < 5) {
    w -= 2.5;
    let p = 2.81022636e-8;
    for (const k of [
      3.43273939e-7, -3.5233877e-6, -4.39150654e-6, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
      1.50140941,
    ])
      p = k + p * w;
    x = p * y;
  } else {
    w = Math.sqrt(w) - 3;
    let p = -0.000200214257;
    for (const k of [
      0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
      2.83297682,
    ])
      p = k + p * w;
    x = p * y;
  }
  for (let i = 0; i < 3; i++) {
    const err = (x < 0 ? erfc(-x) - 1 : erf(x)) - y;
    const step = err / ((2 / Math.sqrt(Math.PI)) * Math.exp(-x * x));
    if (!Number.isFinite(step)) break;
    x -= step;
  }
  return x;
}

/** exp(-|x|) * I1(x), by the power series for small |x| and the asymptotic series for large. */
export function besselI1e(x: number): number {
  if (Number.isNaN(x)) return x;
  const ax = Math.abs(x);
  if (ax === Number.POSITIVE_INFINITY) return 0;
  if (ax <= 30) {
    let term = x / 2;
    let sum = term;
    const q = (x * x) / 4;
    for (let k = 1; k < 300; k++) {
      term *= q / (k * (k + 1));
      sum += term;
      if (Math.abs(term) < 1e-17 * Math.abs(sum)) break;
    }
    return sum * Math.exp(-ax);
  }
  // Asymptotic: I1(x) e^-x ~ 1/sqrt(2 pi x) * sum_k (-1)^k prod (4 - (2j-1)^2) / (k! (8x)^k)
  let term = 1;
  let sum = 1;
  for (let k = 1; k < 30; k++) {
    term *= -(4 - (2 * k - 1) ** 2) / (k * 8 * ax);
    if (Math.abs(term) < 1e-17) break;
    sum += term;
  }
  const v = sum / Math.sqrt(2 * Math.PI * ax);
  return x < 0 ? -v : v;
}

const f64 = new Float64Array(1);
const u64 = new BigInt64Array(f64.buffer);
const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

/** nextafter in f64 (bits = 64) or f32 (bits = 32). */
export function nextAfter(x: number, y: number, bits: 32 | 64): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.NaN;
  if (x === y) return y;
  if (x === 0) {
    const tiny = bits === 64 ? Number.MIN_VALUE : 1.401298464324817e-45;
    return y > 0 ? tiny : -tiny;
  }
  const up = y > x === x > 0;
  if (bits === 64) {
    f64[0] = x;
    u64[0] = (u64[0] as bigint) + (up ? 1n : -1n);
    return f64[0] as number;
  }
  f32[0] = x;
  i32[0] = (i32[0] as number) + (up ? 1 : -1);
  return f32[0] as number;
}

/**
 * reduce_precision as XLA implements it: round the significand to `mant` bits (ties to even),
 * then overflow to infinity above the format's range and flush to zero below its normals.
 */
export function reducePrecision(x: number, expBits: number, mant: number, typeMant: number, typeExp: number): number {
  if (!Number.isFinite(x)) return x;
  let r = x;
  if (mant < typeMant && x !== 0) {
    const e = Math.floor(Math.log2(Math.abs(x)));
    const ex = 2 ** e > Math.abs(x) ? e - 1 : 2 ** (e + 1) <= Math.abs(x) ? e + 1 : e;
    const scale = 2 ** (mant - ex);
    const q = Math.abs(x) * scale;
    let k = Math.round(q);
    if (k - q === 0.5 && k % 2 === 1) k -= 1;
    r = Math.sign(x) * (k / scale);
  }
  if (expBits < typeExp && r !== 0) {
    const bias = 2 ** (expBits - 1) - 1;
    const a = Math.abs(r);
    if (a >= 2 ** (bias + 1)) return r > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    if (a < 2 ** (1 - bias)) return r > 0 ? 0 : -0;
  }
  return r;
}

const LOG_HALF_F32 = Math.fround(Math.log(0.5));
const fr = Math.fround;

/**
 * sinh / cosh the way XLA evaluates chlo.sinh / chlo.cosh for f32 and narrower types:
 * e^(x + log(1/2)) +- e^(-x + log(1/2)) with every step rounded to f32. The rounding of the
 * shifted argument is what makes XLA's results differ from the exact values by several ULP for
 * large |x|; reproducing it keeps the engine's answers equal to XLA's.
 */
export function coshF32(x: number): number {
  return fr(fr(Math.exp(fr(x + LOG_HALF_F32))) + fr(Math.exp(fr(-x + LOG_HALF_F32))));
}

export function sinhF32(x: number): number {
  if (Math.abs(x) < 1) {
    return fr(fr(fr(Math.expm1(x)) - fr(Math.expm1(-x))) * 0.5);
  }
  return fr(fr(Math.exp(fr(x + LOG_HALF_F32))) - fr(Math.exp(fr(-x + LOG_HALF_F32))));
}

/**
 * tanh, exp and logistic of f32 values as XLA CPU computes them (JAX 0.10.2 on x86-64 with FMA),
 * so the engine's results carry the same bits as XLA's rather than the correctly rounded ones
 * (XLA's tanh is up to 5 f32 ULP from those, exp 1, logistic 2). Every step is an f32 operation
 * in XLA's order. XLA fuses each multiply with the add after it (an FMA); here the operands
 * are f32, so the product is exact in f64 and Math.fround(a * b + c) rounds the sum twice (to
 * f64, then to f32), which fused-simd-math.ts does the same way on four lanes. That differs
 * from one rounding only where the f64 sum lands on an f32 tie the exact one was not (about
 * 2^-29 of sums); for all 2^32 f32 inputs the three functions still give XLA's bits
 * (src/tools/xla-unary-agreement.ts checks that), and the tests compare both paths with a
 * fixture of XLA's outputs.
 *
 * The facts come from XLA's sources (its tanh intrinsic and the Cephes-style exp its CPU
 * compiler emits for f32) and from the machine code XLA generates for them: which additions
 * are fused with the multiply before them, the clamps, and how NaN passes through.
 */
import { fastRoundF16 } from "./half-bits.ts";

const f = Math.fround;

/** tanh: x itself below this magnitude, the sign of x from TANH_SATURATE on. */
export const TANH_SMALL = f(0.0004);
export const TANH_SATURATE = 20;
/** The clamp of the FMA variant: the rational function is exactly +-1 there. */
export const TANH_CLAMP = f(7.998811721801758);
/** Numerator coefficients (odd polynomial in x, Horner in x^2, highest power first). */
export const TANH_NUM = [
  -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-8, 1.48572235717979e-5,
  6.37261928875436e-4, 4.89352455891786e-3,
].map(f);
/** Denominator coefficients (even polynomial, Horner in x^2). */
export const TANH_DEN = [1.19825839466702e-6, 1.18534705686654e-4, 2.268434632439e-3, 4.89352518554385e-3].map(f);

const [N0, N1, N2, N3, N4, N5, N6] = TANH_NUM as [number, number, number, number, number, number, number];
const [D0, D1, D2, D3] = TANH_DEN as [number, number, number, number];

/**
 * tanh of an f32 value, as an f32 value. The polynomials are written out rather than looped over
 * the coefficient arrays: this runs once per element of GELU and LSTM loops.
 */
export function tanhXlaF32(x: number): number {
  const a = Math.abs(x);
  if (a < TANH_SMALL) return x;
  if (a >= TANH_SATURATE) return x > 0 ? 1 : -1;
  // NaN fails every compare and stays NaN through the clamp.
  // biome-ignore lint/complexity/useMathMinMax: compares cost less than Math.min / Math.max here
  const c = x < -TANH_CLAMP ? -TANH_CLAMP : x > TANH_CLAMP ? TANH_CLAMP : x;
  const s = f(c * c);
  const p = f(s * f(s * f(s * f(s * f(s * f(s * N0 + N1) + N2) + N3) + N4) + N5) + N6);
  const q = f(s * f(s * f(s * D0 + D1) + D2) + D3);
  return f(f(c * p) / q);
}

/** exp: the input clamp, then e^x = 2^n e^r with n = floor(x log2(e) + 1/2) in [-127, 127]. */
export const EXP_LO = f(-87.8);
export const EXP_HI = f(88.8);
export const EXP_LOG2E = f(Math.LOG2E);
/** ln 2 in two parts (Cody and Waite): n * EXP_LN2_HI is exact. */
export const EXP_LN2_HI = 0.693359375;
export const EXP_LN2_LO = f(-2.1219444e-4);
/** e^r - 1 - r = r^2 P(r); P's coefficients, highest power first. */
export const EXP_POLY = [1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 0.5].map(f);

/**
 * The f32 scale 2^n that XLA builds from the bits (n + 127) << 23: n = -127 gives the bits of
 * +0, so every result from there down is +0 (XLA's exp has no subnormal results).
 */
const SCALES = Float64Array.from({ length: 255 }, (_, i) => (i === 0 ? 0 : 2 ** (i - 127)));

/**
 * The smallest normal f32. XLA CPU runs with subnormal results flushed to zero (and subnormal
 * operands read as zero), so a positive result below this is +0.
 */
export const F32_MIN_NORMAL = 2 ** -126;

const [P0, P1, P2, P3, P4, P5] = EXP_POLY as [number, number, number, number, number, number];

/** exp of an f32 value, as an f32 value (written out, as tanh is). */
export function expXlaF32(x: number): number {
  // Compares cost less than Math.min / Math.max here (12.6 against 25 ns an element); NaN
  // fails them all and stays NaN.
  // biome-ignore lint/complexity/useMathMinMax: see above
  const xc = x < EXP_LO ? EXP_LO : x > EXP_HI ? EXP_HI : x;
  const t = Math.floor(f(xc * EXP_LOG2E + 0.5));
  // biome-ignore lint/complexity/useMathMinMax: see above
  const n = t < -127 ? -127 : t > 127 ? 127 : t;
  const r = f(f(xc - n * EXP_LN2_HI) - n * EXP_LN2_LO);
  const p = f(r * f(r * f(r * f(r * f(r * P0 + P1) + P2) + P3) + P4) + P5);
  const e = f(f(p * f(r * r) + r) + 1);
  // The scale is a power of two, so the product is exact unless it is subnormal, and that is
  // flushed. NaN: e is NaN and fails the compare.
  const y = f(e * (SCALES[(n + 127) | 0] as number));
  return y < F32_MIN_NORMAL ? 0 : y;
}

/**
 * logistic as XLA rewrites it, 1 / (1 + exp(-x)). XLA fuses exp's last multiply with the add
 * of 1; that multiply is by a power of two, exact unless the product is subnormal (then 1 + it
 * is 1 either way), so the unfused sum below has the same bits.
 */
export function logisticXlaF32(x: number): number {
  const y = f(1 / f(1 + expXlaF32(-x)));
  return y < F32_MIN_NORMAL ? 0 : y;
}

/**
 * logistic of an f16 value. XLA rewrites an f16 logistic into f16 ops (exp, add, divide), each
 * computed in f32 and rounded to f16; a bf16 one is first widened to an f32 logistic, which is
 * logisticXlaF32 rounded once at the end.
 */
export function logisticXlaF16(x: number): number {
  return fastRoundF16(1 / fastRoundF16(1 + fastRoundF16(expXlaF32(-x))));
}

/**
 * tanh, exp and logistic inside the fused SIMD loop, four f32 lanes at a time, with the same
 * operations in the same order as elem/xla-f32-math.ts (XLA CPU's algorithms), so both paths
 * give XLA's bits. WebAssembly SIMD has no fused multiply-add; like the scalar fma32, each one
 * runs on f64 lanes (the product of two f32 values is exact there, the sum rounded to f64) and
 * is rounded to f32 by demoting, which the next step promotes again. The polynomials run on the
 * two f64 halves of the vector and are joined back into f32 lanes for the divisions and selects.
 *
 * Each emitter takes the operand (f32 lanes) from the stack and leaves the result there.
 */
import {
  EXP_HI,
  EXP_LN2_HI,
  EXP_LN2_LO,
  EXP_LO,
  EXP_LOG2E,
  EXP_POLY,
  F32_MIN_NORMAL,
  TANH_CLAMP,
  TANH_DEN,
  TANH_NUM,
  TANH_SATURATE,
  TANH_SMALL,
} from "../elem/xla-f32-math.ts";
import { op } from "../blas/wasm-encode.ts";
import { type Body, S, f32Bits, splat32, splat64 } from "./simd-body.ts";

/** Constants, each held in a local set before the loop (Body.constant). */
const c32 = (b: Body, x: number) => b.constant(splat32(f32Bits(x)));
const c64 = (b: Body, x: number) => b.constant(splat64(x));
const i32c = (b: Body, bits: number) => b.constant(splat32(bits));
const LOW_HALF_OF_BOTH = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
const HIGH_HALF = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];

/** f32 lanes in local `v` -> two locals of f64 lanes: lanes 0-1 and 2-3. */
function halves(b: Body, v: number): [number, number] {
  const lo = b.temp();
  const hi = b.temp();
  statement(b, op.get(v), S.promoteLow, op.set(lo));
  statement(b, op.get(v), op.get(v), S.shuffle(HIGH_HALF), S.promoteLow, op.set(hi));
  return [lo, hi];
}

/** Pushes the f32 lanes of two f64-lane locals (each already holding f32 values). */
function join(b: Body, lo: number, hi: number): void {
  b.emit(op.get(lo), S.demote, op.get(hi), S.demote, S.shuffle(LOW_HALF_OF_BOTH));
}

/** Code that leaves the stack as it found it, ended with a mark (Body.mark: where vectors' code interleaves). */
function statement(b: Body, ...parts: (readonly number[])[]): void {
  b.emit(...parts);
  b.mark();
}

/** The f64 lanes on the stack rounded to f32 (and widened back). */
const ROUND32 = [...S.demote, ...S.promoteLow];

/**
 * Horner's rule in f64 lanes on each chain's local `x`: p = c0, then p = fma32(x, p, c_i); the
 * results in new locals. The chains' steps are interleaved, one step of each in turn, ending
 * together: each step (multiply, add, two roundings) waits about 17 cycles on the one before,
 * and a single chain left the loop waiting on that latency rather than on its arithmetic.
 */
function horners(b: Body, chains: readonly { x: number; coefficients: readonly number[] }[]): number[] {
  const ps = chains.map((c) => {
    const p = b.temp();
    statement(b, c64(b, c.coefficients[0] as number), op.set(p));
    return p;
  });
  const longest = Math.max(...chains.map((c) => c.coefficients.length));
  for (let step = 1; step < longest; step++)
    chains.forEach(({ x, coefficients }, k) => {
      const i = step - (longest - coefficients.length);
      if (i < 1) return;
      const p = ps[k] as number;
      statement(b, op.get(x), op.get(p), S.f64Mul, c64(b, coefficients[i] as number), S.f64Add, ROUND32, op.set(p));
    });
  return ps;
}

/** tanh on the stack's lanes. */
function tanh(b: Body): void {
  const x = b.temp();
  const c = b.temp();
  const s = b.temp();
  statement(b, op.set(x), op.get(x), c32(b, -TANH_CLAMP), S.max, c32(b, TANH_CLAMP), S.min, op.set(c));
  statement(b, op.get(c), op.get(c), S.mul, op.set(s));
  const [sLo, sHi] = halves(b, s);
  const [pLo, pHi, qLo, qHi] = horners(b, [
    { x: sLo, coefficients: TANH_NUM },
    { x: sHi, coefficients: TANH_NUM },
    { x: sLo, coefficients: TANH_DEN },
    { x: sHi, coefficients: TANH_DEN },
  ]) as [number, number, number, number];
  const r = b.temp();
  b.emit(op.get(c));
  join(b, pLo, pHi);
  b.emit(S.mul);
  join(b, qLo, qHi);
  statement(b, S.div, op.set(r));
  // |x| below the cut-off: x itself; from the saturation on: 1 with x's sign. NaN: neither.
  statement(b, op.get(x), op.get(r), op.get(x), S.abs, c32(b, TANH_SMALL), S.f32Lt, S.bitselect, op.set(r));
  b.emit(op.get(x), i32c(b, 0x80000000), S.and, c32(b, 1), S.or, op.get(r));
  b.emit(op.get(x), S.abs, c32(b, TANH_SATURATE), S.f32Ge, S.bitselect);
}

/** e^x on the stack's lanes, subnormal results flushed to +0 as XLA CPU does. */
function exp(b: Body): void {
  const xc = b.temp();
  const t = b.temp();
  statement(b, c32(b, EXP_LO), S.max, c32(b, EXP_HI), S.min, op.set(xc));
  const [xLo, xHi] = halves(b, xc);
  const tLo = b.temp();
  const tHi = b.temp();
  for (const [x, out] of [
    [xLo, tLo],
    [xHi, tHi],
  ] as const)
    statement(b, op.get(x), c64(b, EXP_LOG2E), S.f64Mul, c64(b, 0.5), S.f64Add, ROUND32, op.set(out));
  // n = floor(t) in [-127, 127]; max / min keep NaN, whose scale bits come out as those of 1.
  join(b, tLo, tHi);
  statement(b, S.floor, c32(b, -127), S.max, c32(b, 127), S.min, op.set(t));
  const [nLo, nHi] = halves(b, t);
  // The two halves' steps interleaved (see horners).
  const halvesOf = [
    { x: xLo, n: nLo, r: b.temp(), r2: b.temp() },
    { x: xHi, n: nHi, r: b.temp(), r2: b.temp() },
  ];
  for (const { x, n, r } of halvesOf)
    statement(b, op.get(x), op.get(n), c64(b, EXP_LN2_HI), S.f64Mul, S.f64Sub, ROUND32, op.set(r));
  for (const { n, r } of halvesOf)
    statement(b, op.get(r), op.get(n), c64(b, EXP_LN2_LO), S.f64Mul, S.f64Sub, ROUND32, op.set(r));
  for (const { r, r2 } of halvesOf) statement(b, op.get(r), op.get(r), S.f64Mul, ROUND32, op.set(r2));
  const ps = horners(
    b,
    halvesOf.map(({ r }) => ({ x: r, coefficients: EXP_POLY })),
  );
  const [eLo, eHi] = halvesOf.map(({ r, r2 }, k) => {
    const e = b.temp();
    statement(
      b,
      op.get(ps[k] as number),
      op.get(r2),
      S.f64Mul,
      op.get(r),
      S.f64Add,
      ROUND32,
      c64(b, 1),
      S.f64Add,
      ROUND32,
      op.set(e),
    );
    return e;
  }) as [number, number];
  // e * 2^n, the scale built from the bits (n + 127) << 23.
  const y = b.temp();
  join(b, eLo, eHi);
  statement(b, op.get(t), S.truncSatS, i32c(b, 127), S.i32Add, op.i32(23), S.shl, S.mul, op.set(y));
  b.emit(op.get(y), op.get(y), c32(b, F32_MIN_NORMAL), S.f32Lt, S.andNot);
}

/**
 * 1 / (1 + e^-x), the result's subnormals flushed as well; `narrowSteps` rounds e^-x and the sum
 * to f16 where the op is on f16 (see logisticF16).
 */
function logistic(b: Body, narrowSteps: () => void): void {
  const d = b.temp();
  const y = b.temp();
  b.emit(S.neg);
  exp(b);
  narrowSteps();
  b.emit(c32(b, 1), S.add);
  narrowSteps();
  statement(b, op.set(d), c32(b, 1), op.get(d), S.div, op.set(y));
  b.emit(op.get(y), op.get(y), c32(b, F32_MIN_NORMAL), S.f32Lt, S.andNot);
}

/**
 * The unary functions the module computes itself, by op name; the second argument rounds the
 * value on the stack to f16 where XLA keeps an f16 op's steps in f16, and does nothing otherwise.
 */
export const MATH: Record<string, (b: Body, narrowSteps: () => void) => void> = { tanh, exponential: exp, logistic };

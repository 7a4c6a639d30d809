import { type ElemType, type NDArray, allocData, elementCount } from "../array.ts";
import { unsupported } from "./errors.ts";

/**
 * Complex elementwise ops on interleaved (re, im) storage, computed in f64 and stored at the
 * type's precision (c64 rounds through its Float32Array). Formulas follow the usual C99 /
 * XLA definitions; branch cuts are the principal ones.
 */

type C = [number, number];
type Unary = (re: number, im: number) => C;
type Binary = (ar: number, ai: number, br: number, bi: number) => C;

const cexp: Unary = (re, im) => {
  if (im === 0) return [Math.exp(re), im];
  const e = Math.exp(re);
  return [e * Math.cos(im), e * Math.sin(im)];
};
const clog: Unary = (re, im) => [Math.log(Math.hypot(re, im)), Math.atan2(im, re)];
const csqrt: Unary = (re, im) => {
  if (re === 0 && im === 0) return [0, im];
  const m = Math.hypot(re, im);
  const t = Math.sqrt((m + Math.abs(re)) / 2);
  if (re >= 0) return [t, im / (2 * t)];
  return [Math.abs(im) / (2 * t), im < 0 || Object.is(im, -0) ? -t : t];
};
const cmul: Binary = (ar, ai, br, bi) => [ar * br - ai * bi, ar * bi + ai * br];
const cdiv: Binary = (ar, ai, br, bi) => {
  // Smith's algorithm: avoids overflow in |b|^2.
  if (Math.abs(br) >= Math.abs(bi)) {
    if (br === 0 && bi === 0) return [ar / 0, ai / 0];
    const r = bi / br;
    const d = br + bi * r;
    return [(ar + ai * r) / d, (ai - ar * r) / d];
  }
  const r = br / bi;
  const d = bi + br * r;
  return [(ar * r + ai) / d, (ai * r - ar) / d];
};

/**
 * asin and acos after Hull, Fairgrieve and Tang (1997): A = (|z+1| + |z-1|)/2 and the real
 * parts are taken through forms that avoid the cancellation of the textbook log formulas (which
 * lose most digits of small imaginary parts). Works on |x|, |y|; callers restore the signs.
 */
function asinAcosParts(x: number, y: number): { asinRe: number; acosRe: number; im: number } {
  const r = Math.hypot(x + 1, y);
  const s = Math.hypot(x - 1, y);
  const a = 0.5 * (r + s);
  const b = x / a;
  const yy = y * y;
  let asinRe: number;
  let acosRe: number;
  if (b <= 0.6417) {
    asinRe = Math.asin(b);
    acosRe = Math.acos(b);
  } else if (x <= 1) {
    const half = Math.sqrt(0.5 * (a + x) * (yy / (r + x + 1) + (s + (1 - x))));
    asinRe = Math.atan(x / half);
    acosRe = Math.atan(half / x);
  } else {
    const apx = a + x;
    const half = y * Math.sqrt(0.5 * (apx / (r + x + 1) + apx / (s + (x - 1))));
    asinRe = Math.atan(x / half);
    acosRe = Math.atan(half / x);
  }
  let im: number;
  if (a <= 1.5) {
    const am1 = x < 1 ? 0.5 * (yy / (r + (x + 1)) + yy / (s + (1 - x))) : 0.5 * (yy / (r + (x + 1)) + (s + (x - 1)));
    im = Math.log1p(am1 + Math.sqrt(am1 * (a + 1)));
  } else im = Math.log(a + Math.sqrt(a * a - 1));
  return { asinRe, acosRe, im };
}

const casin: Unary = (re, im) => {
  const p = asinAcosParts(Math.abs(re), Math.abs(im));
  return [Math.sign(re) * p.asinRe || re * 0, im < 0 || Object.is(im, -0) ? -p.im : p.im];
};
const cacos: Unary = (re, im) => {
  const p = asinAcosParts(Math.abs(re), Math.abs(im));
  return [re < 0 ? Math.PI - p.acosRe : p.acosRe, im < 0 || Object.is(im, -0) ? p.im : -p.im];
};

const csub = (a: C, b: C): C => [a[0] - b[0], a[1] - b[1]];
/** asinh(z) = -i asin(iz). */
const casinh: Unary = (re, im) => {
  const [a, b] = casin(-im, re);
  return [b, -a];
};
/** acosh(z) = +-i acos(z), the sign chosen so the real part is non-negative. */
const cacosh: Unary = (re, im) => {
  const [u, v] = cacos(re, im);
  return im < 0 ? [v, -u] : [-v, u];
};
const catanh: Unary = (re, im) => {
  // (log(1 + z) - log(1 - z)) / 2
  const [ar, ai] = csub(clog(1 + re, im), clog(1 - re, -im));
  return [ar / 2, ai / 2];
};

const UNARY: Record<string, Unary> = {
  cbrt: (re, im) => {
    if (re === 0 && im === 0) return [re, im];
    const [lr, li] = clog(re, im);
    return cexp(lr / 3, li / 3);
  },
  sinh: (re, im) => [Math.sinh(re) * Math.cos(im), Math.cosh(re) * Math.sin(im)],
  cosh: (re, im) => [Math.cosh(re) * Math.cos(im), Math.sinh(re) * Math.sin(im)],
  asinh: casinh,
  acosh: cacosh,
  atanh: catanh,
  asin: casin,
  acos: cacos,
  // atan(z) = -i atanh(iz)
  atan: (re, im) => {
    const [r, i] = catanh(-im, re);
    return [i, -r];
  },
  negate: (re, im) => [-re, -im],
  exponential: cexp,
  log: clog,
  sqrt: csqrt,
  rsqrt: (re, im) => {
    const [sr, si] = csqrt(re, im);
    return cdiv(1, 0, sr, si);
  },
  sign: (re, im) => {
    if (Number.isNaN(re) || Number.isNaN(im)) return [Number.NaN, Number.NaN];
    const m = Math.hypot(re, im);
    return m === 0 ? [re, im] : [re / m, im / m];
  },
  exponential_minus_one: (re, im) => {
    const [er, ei] = cexp(re, im);
    // expm1(re) keeps precision for small re when im is 0
    return im === 0 ? [Math.expm1(re), im] : [er - 1, ei];
  },
  log_plus_one: (re, im) => {
    if (im === 0 && re > -1) return [Math.log1p(re), im];
    const [lr, li] = clog(1 + re, im);
    return [lr, li];
  },
  sine: (re, im) => [Math.sin(re) * Math.cosh(im), Math.cos(re) * Math.sinh(im)],
  cosine: (re, im) => [Math.cos(re) * Math.cosh(im), -Math.sin(re) * Math.sinh(im)],
  tanh: (re, im) => {
    const d = Math.cosh(2 * re) + Math.cos(2 * im);
    return [Math.sinh(2 * re) / d, Math.sin(2 * im) / d];
  },
  tan: (re, im) => {
    const d = Math.cos(2 * re) + Math.cosh(2 * im);
    return [Math.sin(2 * re) / d, Math.sinh(2 * im) / d];
  },
  logistic: (re, im) => {
    const [er, ei] = cexp(-re, -im);
    return cdiv(1, 0, 1 + er, ei);
  },
};

/** Lexicographic on (re, im), as the spec orders complex numbers for maximum / minimum. */
const greater = (ar: number, ai: number, br: number, bi: number): boolean => ar > br || (ar === br && ai > bi);

const BINARY: Record<string, Binary> = {
  maximum: (ar, ai, br, bi) => (greater(ar, ai, br, bi) || (ar === br && ai === bi) ? [ar, ai] : [br, bi]),
  minimum: (ar, ai, br, bi) => (greater(br, bi, ar, ai) || (ar === br && ai === bi) ? [ar, ai] : [br, bi]),
  // atan2(y, x) = -i log((x + i y) / sqrt(x^2 + y^2))
  atan2: (yr, yi, xr, xi) => {
    const [nr, ni] = [xr - yi, xi + yr];
    const [sr, si] = csqrt(xr * xr - xi * xi + yr * yr - yi * yi, 2 * (xr * xi + yr * yi));
    const [qr, qi] = cdiv(nr, ni, sr, si);
    const [lr, li] = clog(qr, qi);
    return [li, -lr];
  },
  add: (ar, ai, br, bi) => [ar + br, ai + bi],
  subtract: (ar, ai, br, bi) => [ar - br, ai - bi],
  multiply: cmul,
  divide: cdiv,
  power: (ar, ai, br, bi) => {
    if (br === 0 && bi === 0) return [1, 0];
    if (ar === 0 && ai === 0) return br > 0 ? [0, 0] : [Number.NaN, Number.NaN];
    const [lr, li] = clog(ar, ai);
    const [pr, pi] = cmul(lr, li, br, bi);
    return cexp(pr, pi);
  },
};

export function realTypeOf(t: ElemType): ElemType {
  return t === "c64" ? "f32" : "f64";
}

function count(x: NDArray): number {
  return elementCount(x.shape);
}

export function complexUnary(op: string, x: NDArray): NDArray {
  const n = count(x);
  const s = x.data as Float64Array;
  if (op === "abs" || op === "real" || op === "imag") {
    const out = allocData(realTypeOf(x.type), n) as Float64Array;
    for (let i = 0; i < n; i++) {
      const re = s[2 * i] as number;
      const im = s[2 * i + 1] as number;
      out[i] = op === "abs" ? Math.hypot(re, im) : op === "real" ? re : im;
    }
    return { type: realTypeOf(x.type), shape: [...x.shape], data: out };
  }
  if (op === "is_finite") throw unsupported(op, "is_finite takes a float operand");
  const f = (x.type === "c64" ? F32_UNARY[op] : undefined) ?? UNARY[op];
  if (!f) throw unsupported(op, `${op} on complex numbers is not supported`);
  const out = allocData(x.type, n) as Float64Array;
  for (let i = 0; i < n; i++) {
    const [re, im] = f(s[2 * i] as number, s[2 * i + 1] as number);
    out[2 * i] = re;
    out[2 * i + 1] = im;
  }
  return { type: x.type, shape: [...x.shape], data: out };
}

export function hasComplexOp(op: string): boolean {
  return op in UNARY || op in BINARY || op === "abs" || op === "real" || op === "imag";
}

/**
 * c64 arithmetic as XLA does it: every real operation rounded to f32 (products and sums in
 * multiply, the exponentials in sin / cos), so results match XLA's bit for bit where the f64
 * formula would differ by an f32 ULP that tolerances on large values do not absorb.
 */
const fr = Math.fround;
const F32_BINARY: Record<string, Binary> = {
  // XLA's CPU code contracts a*b - c*d into fma(a, b, -(c*d)): one product is rounded, one is not.
  multiply: (ar, ai, br, bi) => [fr(ar * br - fr(ai * bi)), fr(fr(ar * bi) + ai * br)],
};
const F32_UNARY: Record<string, Unary> = {
  sine: (re, im) => {
    const e = fr(Math.exp(im));
    const en = fr(Math.exp(-im));
    const cosh = fr(fr(e + en) * 0.5);
    const sinh = fr(fr(e - en) * 0.5);
    return [fr(fr(Math.sin(re)) * cosh), fr(fr(Math.cos(re)) * sinh)];
  },
  cosine: (re, im) => {
    const e = fr(Math.exp(im));
    const en = fr(Math.exp(-im));
    const cosh = fr(fr(e + en) * 0.5);
    const sinh = fr(fr(e - en) * 0.5);
    return [fr(fr(Math.cos(re)) * cosh), fr(-fr(fr(Math.sin(re)) * sinh))];
  },
};

export function complexBinary(op: string, a: NDArray, b: NDArray): NDArray {
  const f = (a.type === "c64" ? F32_BINARY[op] : undefined) ?? BINARY[op];
  if (!f) throw unsupported(op, `${op} on complex numbers is not supported`);
  const n = Math.max(count(a), count(b));
  const sa = count(a) === 1 ? 0 : 2;
  const sb = count(b) === 1 ? 0 : 2;
  const x = a.data as Float64Array;
  const y = b.data as Float64Array;
  const out = allocData(a.type, n) as Float64Array;
  for (let i = 0; i < n; i++) {
    const [re, im] = f(x[sa * i] as number, x[sa * i + 1] as number, y[sb * i] as number, y[sb * i + 1] as number);
    out[2 * i] = re;
    out[2 * i + 1] = im;
  }
  return { type: a.type, shape: count(a) === 1 ? [...b.shape] : [...a.shape], data: out };
}

/** complex(re, im) from two float arrays. */
export function makeComplex(re: NDArray, im: NDArray): NDArray {
  const type: ElemType = re.type === "f64" ? "c128" : "c64";
  const n = Math.max(count(re), count(im));
  const out = allocData(type, n) as Float64Array;
  const sr = count(re) === 1 ? 0 : 1;
  const si = count(im) === 1 ? 0 : 1;
  for (let i = 0; i < n; i++) {
    out[2 * i] = re.data[sr * i] as number;
    out[2 * i + 1] = im.data[si * i] as number;
  }
  return { type, shape: count(re) === 1 ? [...im.shape] : [...re.shape], data: out };
}

export function complexCompare(direction: string, a: NDArray, b: NDArray): NDArray {
  if (direction !== "EQ" && direction !== "NE") throw unsupported("compare", `${direction} on complex numbers`);
  const n = Math.max(count(a), count(b));
  const sa = count(a) === 1 ? 0 : 2;
  const sb = count(b) === 1 ? 0 : 2;
  const x = a.data as Float64Array;
  const y = b.data as Float64Array;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const eq = x[sa * i] === y[sb * i] && x[sa * i + 1] === y[sb * i + 1];
    out[i] = (direction === "EQ") === eq ? 1 : 0;
  }
  return { type: "i1", shape: count(a) === 1 ? [...b.shape] : [...a.shape], data: out };
}

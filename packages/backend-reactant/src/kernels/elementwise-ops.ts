import { type ElemType, type NDArray, allocData, bitWidth, isComplexType, isFloatType } from "../array.ts";
import type { Op } from "@xlaserve/stablehlo";
import type { Arena } from "../plan/arena.ts";
import type { Kernel } from "../plan/program.ts";
import { complexBinary, complexCompare, complexUnary, hasComplexOp, makeComplex, realTypeOf } from "./complex.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { makeElementwise } from "./elementwise.ts";
import { unsupported } from "./errors.ts";
import { binaryExpr, compareExpr, convertExpr, domainOf, hasFloatUnary, roundExpr, unaryExpr } from "./expr.ts";
import { compareTotalOrder } from "./total-order.ts";

/**
 * Kernels for the elementwise ops. Loops are generated per input types on first use (types are
 * known only once values arrive for ops whose printed signature omits them) and cached.
 */

/** `arena`, where given, supplies the output storage (kernels that do not use it allocate). */
type ArrayKernel = (inputs: NDArray[], arena?: Arena) => NDArray;

/**
 * A kernel built per combination of input types. The last combination is checked first: an
 * op of a compiled program sees the same types on every run.
 */
function byTypes(build: (types: ElemType[]) => ArrayKernel): Kernel {
  const cache = new Map<string, ArrayKernel>();
  let lastTypes: ElemType[] = [];
  let last: ArrayKernel | null = null;
  return (args, frame) => {
    const arrays = args as NDArray[];
    let k = last;
    if (k === null || !sameTypes(lastTypes, arrays)) {
      const types = arrays.map((a) => a.type);
      const key = types.join(",");
      k = cache.get(key) ?? null;
      if (!k) {
        k = build(types);
        cache.set(key, k);
      }
      lastTypes = types;
      last = k;
    }
    return [k(arrays, frame.ctx.arena)];
  };
}

function sameTypes(types: ElemType[], arrays: NDArray[]): boolean {
  if (types.length !== arrays.length) return false;
  for (let i = 0; i < types.length; i++) if ((arrays[i] as NDArray).type !== types[i]) return false;
  return true;
}

export const BINARY_OPS = new Set([
  "add",
  "subtract",
  "multiply",
  "divide",
  "remainder",
  "maximum",
  "minimum",
  "power",
  "atan2",
  "and",
  "or",
  "xor",
  "shift_left",
  "shift_right_logical",
  "shift_right_arithmetic",
]);

export const UNARY_OPS = new Set([
  "abs",
  "negate",
  "sqrt",
  "rsqrt",
  "cbrt",
  "exponential",
  "exponential_minus_one",
  "log",
  "log_plus_one",
  "logistic",
  "tanh",
  "sine",
  "cosine",
  "tan",
  "floor",
  "ceil",
  "round_nearest_afz",
  "round_nearest_even",
  "sign",
  "is_finite",
  "not",
  "popcnt",
  "count_leading_zeros",
  "sinh",
  "cosh",
  "asin",
  "acos",
  "atan",
  "asinh",
  "acosh",
  "atanh",
  "lgamma",
  "digamma",
  "erf",
  "erfc",
  "erf_inv",
  "bessel_i1e",
]);

/** Unary ops computed by a helper function (H.*) rather than an inline expression; fused loops call the same ones. */
export const SPECIAL_FUNCTIONS: Readonly<Record<string, string>> = {
  lgamma: "H.lgamma",
  digamma: "H.digamma",
  erf: "H.erf",
  erfc: "H.erfc",
  erf_inv: "H.erfInv",
  bessel_i1e: "H.besselI1e",
};

export function binaryKernel(op: string): Kernel {
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (isComplexType(t)) return ([a, b]) => complexBinary(op, a as NDArray, b as NDArray);
    return makeElementwise(op, types, t, ([a, b]) => binaryExpr(op, t, a as string, b as string));
  });
}

export function unaryKernel(op: string): Kernel {
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (isComplexType(t)) {
      if (!hasComplexOp(op)) throw unsupported(op, `${op} on ${t}`);
      return ([x]) => complexUnary(op, x as NDArray);
    }
    const special = SPECIAL_FUNCTIONS[op];
    if (special) {
      if (!isFloatType(t)) throw unsupported(op, `${op} on ${t}`);
      return makeElementwise(op, types, t, ([a]) => `${special}(${a})`);
    }
    if (op === "is_finite") return makeElementwise(op, types, "i1", ([a]) => `Number.isFinite(${a})`);
    if ((op === "sinh" || op === "cosh") && t !== "f64") {
      return makeElementwise(op, types, t, ([a]) => `H.${op}F32(${a})`);
    }
    if (isFloatType(t) && !hasFloatUnary(op)) throw unsupported(op, `${op} on ${t}`);
    return makeElementwise(op, types, t, ([a]) => unaryExpr(op, t, a as string));
  });
}

export function compareKernel(op: Op): Kernel {
  const direction = String(op.attrs.comparison_direction ?? "EQ");
  const compareType = String(op.attrs.compare_type ?? "");
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (isComplexType(t)) return ([a, b]) => complexCompare(direction, a as NDArray, b as NDArray);
    if (compareType === "TOTALORDER" && isFloatType(t)) {
      return ([a, b]) => compareTotalOrder(direction, a as NDArray, b as NDArray);
    }
    return makeElementwise(`compare_${direction}`, types, "i1", ([a, b]) =>
      compareExpr(direction, a as string, b as string),
    );
  });
}

export function selectKernel(): Kernel {
  return byTypes((types) => {
    const t = types[1] as ElemType;
    if (isComplexType(t)) return selectComplex;
    return makeElementwise("select", types, t, ([p, a, b]) => `(${p} ? ${a} : ${b})`);
  });
}

function selectComplex([p, a, b]: NDArray[]): NDArray {
  const pred = p as NDArray;
  const x = a as NDArray;
  const y = b as NDArray;
  const n = Math.max(pred.data.length, x.data.length / 2, y.data.length / 2);
  const out = new (x.data.constructor as Float64ArrayConstructor)(2 * n);
  const ps = pred.data.length === 1 ? 0 : 1;
  const xs = x.data.length === 2 ? 0 : 2;
  const ys = y.data.length === 2 ? 0 : 2;
  for (let i = 0; i < n; i++) {
    const src = pred.data[ps * i] ? x.data : y.data;
    const at = (pred.data[ps * i] ? xs : ys) * i;
    out[2 * i] = src[at] as number;
    out[2 * i + 1] = src[at + 1] as number;
  }
  const shape = [pred, x, y].reduce((s, v) => (v.shape.length > s.length ? v.shape : s), [] as number[]);
  return { type: x.type, shape: [...shape], data: out };
}

export function clampKernel(): Kernel {
  return byTypes((types) => {
    const t = types[1] as ElemType;
    if (isComplexType(t)) throw unsupported("clamp", "clamp on complex numbers");
    if (domainOf(t) === "float") {
      return makeElementwise("clamp", types, t, ([lo, x, hi]) => `H.minFloat(H.maxFloat(${x}, ${lo}), ${hi})`);
    }
    return makeElementwise("clamp", types, t, ([lo, x, hi]) => {
      const m = `(${x} > ${lo} ? ${x} : ${lo})`;
      return `(${m} < ${hi} ? ${m} : ${hi})`;
    });
  });
}

export function convertKernel(to: ElemType): Kernel {
  return byTypes((types) => {
    const from = types[0] as ElemType;
    if (isComplexType(from) || isComplexType(to)) return ([x]) => convertComplex(x as NDArray, to);
    return makeElementwise(`convert_${to}`, types, to, ([a]) => convertExpr(from, to, a as string));
  });
}

function convertComplex(x: NDArray, to: ElemType): NDArray {
  if (isComplexType(x.type) && isComplexType(to)) {
    const out = to === "c64" ? Float32Array.from(x.data as Float64Array) : Float64Array.from(x.data as Float64Array);
    return { type: to, shape: [...x.shape], data: out };
  }
  if (isComplexType(x.type)) {
    // complex -> real keeps the real part (XLA's rule), then converts it like any float
    const real = complexUnary("real", x);
    return makeElementwise(`convert_${to}`, [real.type], to, ([a]) => convertExpr(real.type, to, a as string))([real]);
  }
  const realType = realTypeOf(to);
  const asFloat = makeElementwise(`convert_${realType}`, [x.type], realType, ([a]) =>
    convertExpr(x.type, realType, a as string),
  )([x]);
  const zero: NDArray = { type: realType, shape: [], data: allocData(realType, 1) };
  return { ...makeComplex(asFloat, zero), shape: [...x.shape] };
}

export function reducePrecisionKernel(op: Op): Kernel {
  const e = Number(op.attrs.exponent_bits);
  const m = Number(op.attrs.mantissa_bits);
  return byTypes(
    () =>
      ([x]) =>
        reducePrecisionBits(x as NDArray, e, m),
  );
}

const FORMATS: Partial<Record<ElemType, [number, number, number]>> = {
  f16: [16, 5, 10],
  bf16: [16, 8, 7],
  f32: [32, 8, 23],
  f64: [64, 11, 52],
};

/**
 * reduce_precision on the raw bits, as XLA does it: round the significand to `m` bits (ties to
 * even, carrying into the exponent), then overflow to infinity / flush to zero outside the
 * `e`-bit exponent range.
 */
function reducePrecisionBits(x: NDArray, e: number, m: number): NDArray {
  const format = FORMATS[x.type];
  if (!format) throw unsupported("reduce_precision", `reduce_precision on ${x.type}`);
  const [bits, srcExp, srcMant] = format;
  const W = BigInt(bits);
  const data = x.data;
  const raw =
    bits === 64
      ? Array.from(new BigUint64Array(data.buffer, data.byteOffset, data.length))
      : Array.from(
          bits === 32 ? new Uint32Array(data.buffer, data.byteOffset, data.length) : (data as Uint16Array),
          BigInt,
        );
  const full = (1n << W) - 1n;
  const out = raw.map((v) => {
    const expMask = ((1n << BigInt(srcExp)) - 1n) << BigInt(srcMant);
    const isNan = (v & expMask) === expMask && (v & ((1n << BigInt(srcMant)) - 1n)) !== 0n;
    let r = v;
    if (m < srcMant) {
      const shift = BigInt(srcMant - m);
      const lastBit = 1n << shift;
      const bias = (lastBit >> 1n) - 1n + ((r & lastBit) >> shift);
      r = (r + bias) & full & ~(lastBit - 1n) & full;
    }
    if (e < srcExp) {
      const srcBias = (1n << BigInt(srcExp - 1)) - 1n;
      const reducedBias = (1n << BigInt(e - 1)) - 1n;
      const exponent = r & expMask;
      const sign = r & (1n << (W - 1n));
      if (exponent > (srcBias + reducedBias) << BigInt(srcMant)) r = sign | expMask;
      else if (exponent <= (srcBias - reducedBias) << BigInt(srcMant)) r = sign;
    }
    // A NaN keeps its payload when any significand bit survives; with none it can only be infinite.
    if (isNan) return m > 0 ? v : (v & (1n << (W - 1n))) | expMask;
    return r;
  });
  const outData = allocData(x.type, out.length);
  if (bits === 64) new BigUint64Array(outData.buffer).set(out);
  else {
    const view = bits === 32 ? new Uint32Array(outData.buffer) : (outData as Uint16Array);
    out.forEach((v, i) => {
      view[i] = Number(v);
    });
  }
  return { type: x.type, shape: [...x.shape], data: outData };
}

export function nextAfterKernel(): Kernel {
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (t === "f64" || t === "f32") {
      return makeElementwise("next_after", types, t, ([a, b]) => `H.nextAfter(${a}, ${b}, ${bitWidth(t)})`);
    }
    if (t === "f16" || t === "bf16") return ([x, y]) => nextAfter16(x as NDArray, y as NDArray);
    throw unsupported("next_after", `next_after on ${t}`);
  });
}

/** next_after on the raw bits of f16 / bf16 (one step of the 16-bit pattern). */
function nextAfter16(x: NDArray, y: NDArray): NDArray {
  const decode = x.type === "f16" ? F16_TO_NUMBER : BF16_TO_NUMBER;
  const nanBits = x.type === "f16" ? 0x7e00 : 0x7fc0;
  const xs = x.data as Uint16Array;
  const ys = y.data as Uint16Array;
  const n = Math.max(xs.length, ys.length);
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    const xb = xs[xs.length === 1 ? 0 : i] as number;
    const yb = ys[ys.length === 1 ? 0 : i] as number;
    const a = decode[xb] as number;
    const b = decode[yb] as number;
    if (Number.isNaN(a) || Number.isNaN(b)) out[i] = nanBits;
    else if (a === b) out[i] = yb;
    else if (a === 0) out[i] = (yb & 0x8000) | 1;
    else out[i] = b > a === a > 0 ? xb + 1 : xb - 1;
  }
  return { type: x.type, shape: xs.length === 1 ? [...y.shape] : [...x.shape], data: out };
}

/** real / imag on a real operand: the operand itself, or zeros. */
export function realImagKernel(op: "real" | "imag"): Kernel {
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (isComplexType(t)) return ([x]) => complexUnary(op, x as NDArray);
    return makeElementwise(op, types, t, ([a]) => (op === "real" ? a : roundExpr(t, `${a} * 0`)) as string);
  });
}

export function complexKernel(): Kernel {
  return (args) => [makeComplex(args[0] as NDArray, args[1] as NDArray)];
}

import { type ElemType, type NDArray, bitWidth, isComplexType, isFloatType } from "../array.ts";
import type { Op } from "../ir.ts";
import type { Kernel } from "../plan/program.ts";
import { complexBinary, complexCompare, complexUnary, hasComplexOp, makeComplex, realTypeOf } from "./complex.ts";
import { makeElementwise } from "./elementwise.ts";
import { unsupported } from "./errors.ts";
import { binaryExpr, compareExpr, convertExpr, domainOf, hasFloatUnary, roundExpr, unaryExpr } from "./expr.ts";
import { compareTotalOrder } from "./total-order.ts";

/**
 * Kernels for the elementwise ops. Loops are generated per input types on first use (types are
 * known only once values arrive for ops whose printed signature omits them) and cached.
 */

type ArrayKernel = (inputs: NDArray[]) => NDArray;

function byTypes(build: (types: ElemType[]) => ArrayKernel): Kernel {
  const cache = new Map<string, ArrayKernel>();
  return (args) => {
    const arrays = args as NDArray[];
    const key = arrays.map((a) => a.type).join(",");
    let k = cache.get(key);
    if (!k) {
      k = build(arrays.map((a) => a.type));
      cache.set(key, k);
    }
    return [k(arrays)];
  };
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

const SPECIAL: Record<string, string> = {
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
    const special = SPECIAL[op];
    if (special) {
      if (!isFloatType(t)) throw unsupported(op, `${op} on ${t}`);
      return makeElementwise(op, types, t, ([a]) => `${special}(${a})`);
    }
    if (op === "is_finite") return makeElementwise(op, types, "i1", ([a]) => `Number.isFinite(${a})`);
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
    return makeElementwise(`compare_${direction}`, types, "i1", ([a, b]) => compareExpr(direction, a as string, b as string));
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
      return makeElementwise("clamp", types, t, ([lo, x, hi]) => `Math.min(Math.max(${x}, ${lo}), ${hi})`);
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
  const n = isComplexType(x.type) ? x.data.length / 2 : x.data.length;
  if (isComplexType(x.type) && isComplexType(to)) {
    const out = to === "c64" ? Float32Array.from(x.data as Float64Array) : Float64Array.from(x.data as Float64Array);
    return { type: to, shape: [...x.shape], data: out };
  }
  if (isComplexType(x.type)) {
    const real: NDArray = complexUnary("real", x);
    return (convertKernel(to)([real], undefined as never)[0] as NDArray) ?? real;
  }
  const asFloat = convertKernel(realTypeOf(to))([x], undefined as never)[0] as NDArray;
  const zero: NDArray = { type: asFloat.type, shape: [], data: new Float64Array(1) };
  void n;
  const made = makeComplex(asFloat, zero);
  return { ...made, shape: [...x.shape] };
}

export function reducePrecisionKernel(op: Op): Kernel {
  const e = Number(op.attrs.exponent_bits);
  const m = Number(op.attrs.mantissa_bits);
  return byTypes((types) => {
    const t = types[0] as ElemType;
    const [typeExp, typeMant] = t === "f16" ? [5, 10] : t === "bf16" ? [8, 7] : t === "f32" ? [8, 23] : [11, 52];
    return makeElementwise(`reduce_precision_${e}_${m}`, types, t, ([a]) => `H.reducePrecision(${a}, ${e}, ${m}, ${typeMant}, ${typeExp})`);
  });
}

export function nextAfterKernel(): Kernel {
  return byTypes((types) => {
    const t = types[0] as ElemType;
    if (t === "f64" || t === "f32") {
      return makeElementwise("next_after", types, t, ([a, b]) => `H.nextAfter(${a}, ${b}, ${bitWidth(t)})`);
    }
    throw unsupported("next_after", `next_after on ${t}`);
  });
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

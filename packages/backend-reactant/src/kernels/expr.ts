import { type ElemType, bitWidth, isBigIntType, isFloatType, isUnsignedIntType } from "../array.ts";
import type { Attr } from "@xlaserve/stablehlo";
import { unsupported } from "./errors.ts";

/**
 * JavaScript expressions for StableHLO elementwise ops on one element, used to generate
 * specialised loops (kernels/elementwise.ts). Operands are already decoded: floats as numbers
 * (f16/bf16 widened), integers up to 32 bits as numbers holding the exact value, 64-bit ints as
 * bigint, i1 as 0/1. `H` names the helper table (elem/helpers.ts).
 */

export type Domain = "float" | "int" | "big" | "bool";

export function domainOf(t: ElemType): Domain {
  if (t === "i1") return "bool";
  if (isFloatType(t)) return "float";
  if (isBigIntType(t)) return "big";
  return "int";
}

/** The JS expression that reads element `idx` of array `arr` of type t. */
export function loadExpr(t: ElemType, arr: string, idx: string): string {
  if (t === "f16") return `H.F16[${arr}[${idx}]]`;
  if (t === "bf16") return `H.BF16[${arr}[${idx}]]`;
  return `${arr}[${idx}]`;
}

/** The statement that writes expression `e` (already in t's domain) as element `idx`. */
export function storeStmt(t: ElemType, arr: string, idx: string, e: string): string {
  switch (t) {
    case "f16":
      return `${arr}[${idx}] = H.encF16(${e});`;
    case "bf16":
      return `${arr}[${idx}] = H.encBf16(${e});`;
    case "i1":
      return `${arr}[${idx}] = (${e}) ? 1 : 0;`;
    case "i2":
      return `${arr}[${idx}] = ((${e}) << 30) >> 30;`;
    case "i4":
      return `${arr}[${idx}] = ((${e}) << 28) >> 28;`;
    case "ui2":
      return `${arr}[${idx}] = (${e}) & 3;`;
    case "ui4":
      return `${arr}[${idx}] = (${e}) & 15;`;
    default:
      return `${arr}[${idx}] = ${e};`;
  }
}

/** Rounds / wraps an intermediate value to type t (for fused chains that skip the store). */
export function roundExpr(t: ElemType, e: string): string {
  switch (t) {
    case "f64":
      return e;
    case "f32":
      return `Math.fround(${e})`;
    case "f16":
      return `H.rF16(${e})`;
    case "bf16":
      return `H.rBf16(${e})`;
    case "i1":
      return `((${e}) ? 1 : 0)`;
    case "i32":
      return `((${e}) | 0)`;
    case "ui32":
      return `((${e}) >>> 0)`;
    case "i64":
      return `BigInt.asIntN(64, ${e})`;
    case "ui64":
      return `BigInt.asUintN(64, ${e})`;
    default: {
      const w = bitWidth(t);
      if (isUnsignedIntType(t)) return `((${e}) & ${2 ** w - 1})`;
      return `(((${e}) << ${32 - w}) >> ${32 - w})`;
    }
  }
}

function signedValue(t: ElemType, a: string): string {
  const w = bitWidth(t);
  if (!isUnsignedIntType(t)) return a;
  return w === 32 ? `(${a} | 0)` : `((${a} << ${32 - w}) >> ${32 - w})`;
}

function unsignedValue(t: ElemType, a: string): string {
  const w = bitWidth(t);
  return w === 32 ? `(${a} >>> 0)` : `(${a} & ${2 ** w - 1})`;
}

/** Integer ops whose JavaScript reads the same on number (int, bool) and bigint operands. */
function integerCommonExpr(op: string, a: string, b: string): string | undefined {
  switch (op) {
    case "maximum":
      return `(${a} > ${b} ? ${a} : ${b})`;
    case "minimum":
      return `(${a} < ${b} ? ${a} : ${b})`;
    case "and":
      return `(${a} & ${b})`;
    case "or":
      return `(${a} | ${b})`;
    case "xor":
      return `(${a} ^ ${b})`;
  }
  return undefined;
}

export function binaryExpr(op: string, t: ElemType, a: string, b: string): string {
  const d = domainOf(t);
  const w = bitWidth(t);
  const unsigned = isUnsignedIntType(t);
  const common = d === "float" ? undefined : integerCommonExpr(op, a, b);
  if (common !== undefined) return common;
  if (d === "float") {
    switch (op) {
      case "add":
        return `(${a} + ${b})`;
      case "subtract":
        return `(${a} - ${b})`;
      case "multiply":
        return `(${a} * ${b})`;
      case "divide":
        return `(${a} / ${b})`;
      case "remainder":
        return `(${a} % ${b})`;
      case "maximum":
        return `H.maxFloat(${a}, ${b})`;
      case "minimum":
        return `H.minFloat(${a}, ${b})`;
      case "power":
        return `H.powFloat(${a}, ${b})`;
      case "atan2":
        return `Math.atan2(${a}, ${b})`;
    }
  } else if (d === "int" || d === "bool") {
    switch (op) {
      case "add":
        return d === "bool" ? `(${a} | ${b})` : `(${a} + ${b})`;
      case "subtract":
        return d === "bool" ? `(${a} ^ ${b})` : `(${a} - ${b})`;
      case "multiply":
        return w >= 32 ? `Math.imul(${a}, ${b})` : `(${a} * ${b})`;
      case "divide":
        return d === "bool" ? a : `(${b} === 0 ? -1 : Math.trunc(${a} / ${b}))`;
      case "remainder":
        return d === "bool" ? "0" : `(${b} === 0 ? ${a} : ${a} % ${b})`;
      case "power":
        return `H.powInt(${a}, ${b}, ${unsigned})`;
      case "shift_left":
        return `((${b} >>> 0) >= ${w} ? 0 : ${a} << ${b})`;
      case "shift_right_logical":
        return `((${b} >>> 0) >= ${w} ? 0 : ${unsignedValue(t, a)} >>> ${b})`;
      case "shift_right_arithmetic": {
        const s = signedValue(t, a);
        return `((${b} >>> 0) >= ${w} ? (${s} < 0 ? -1 : 0) : ${s} >> ${b})`;
      }
    }
  } else {
    switch (op) {
      case "add":
        return `(${a} + ${b})`;
      case "subtract":
        return `(${a} - ${b})`;
      case "multiply":
        return `(${a} * ${b})`;
      case "divide":
        return `(${b} === 0n ? -1n : ${a} / ${b})`;
      case "remainder":
        return `(${b} === 0n ? ${a} : ${a} % ${b})`;
      case "power":
        return `H.powBig(${a}, ${b}, ${unsigned})`;
      case "shift_left":
        return `(BigInt.asUintN(64, ${b}) >= 64n ? 0n : ${a} << ${b})`;
      case "shift_right_logical":
        return `(BigInt.asUintN(64, ${b}) >= 64n ? 0n : BigInt.asUintN(64, ${a}) >> ${b})`;
      case "shift_right_arithmetic":
        return `(BigInt.asIntN(64, ${a}) >> (BigInt.asUintN(64, ${b}) >= 64n ? 63n : ${b}))`;
    }
  }
  throw unsupported(op, `${op} on ${t}`);
}

export function unaryExpr(op: string, t: ElemType, a: string): string {
  const d = domainOf(t);
  const w = bitWidth(t);
  if (d === "float") {
    // f32 and narrower: XLA CPU's own algorithms (elem/xla-f32-math.ts), so the bits agree with it.
    if (op === "logistic" && t === "f16") return `H.logisticF16(${a})`;
    if (t !== "f64" && op in XLA_F32) return `H.${XLA_F32[op]}(${a})`;
    const f = FLOAT_UNARY[op];
    if (f) return f(a);
  } else if (d === "int" || d === "bool") {
    switch (op) {
      case "abs":
        return `(${a} < 0 ? -${a} : ${a})`;
      case "negate":
        return `(-${a})`;
      case "sign":
        return d === "bool" ? a : `(${a} > 0 ? 1 : ${a} < 0 ? -1 : 0)`;
      case "not":
        return d === "bool" ? `(${a} ^ 1)` : `(~${a})`;
      case "popcnt":
        return `H.popcount32(${unsignedValue(t, a)})`;
      case "count_leading_zeros":
        return `(Math.clz32(${unsignedValue(t, a)}) - ${32 - w})`;
    }
  } else {
    switch (op) {
      case "abs":
        return `(${a} < 0n ? -${a} : ${a})`;
      case "negate":
        return `(-${a})`;
      case "sign":
        return `(${a} > 0n ? 1n : ${a} < 0n ? -1n : 0n)`;
      case "not":
        return `(~${a})`;
      case "popcnt":
        return `H.popcountBig(${a})`;
      case "count_leading_zeros":
        return `H.clzBig(${a})`;
    }
  }
  throw unsupported(op, `${op} on ${t}`);
}

const XLA_F32: Record<string, string> = { tanh: "tanhF32", exponential: "expF32", logistic: "logisticF32" };

const FLOAT_UNARY: Record<string, (a: string) => string> = {
  abs: (a) => `Math.abs(${a})`,
  negate: (a) => `(-${a})`,
  sqrt: (a) => `Math.sqrt(${a})`,
  rsqrt: (a) => `(1 / Math.sqrt(${a}))`,
  cbrt: (a) => `Math.cbrt(${a})`,
  exponential: (a) => `Math.exp(${a})`,
  exponential_minus_one: (a) => `Math.expm1(${a})`,
  log: (a) => `Math.log(${a})`,
  log_plus_one: (a) => `Math.log1p(${a})`,
  logistic: (a) => `(1 / (1 + Math.exp(-${a})))`,
  tanh: (a) => `Math.tanh(${a})`,
  sine: (a) => `Math.sin(${a})`,
  cosine: (a) => `Math.cos(${a})`,
  tan: (a) => `Math.tan(${a})`,
  floor: (a) => `Math.floor(${a})`,
  ceil: (a) => `Math.ceil(${a})`,
  round_nearest_afz: (a) => `H.roundAfz(${a})`,
  // Adding and subtracting 1.5 * 2^52 rounds to an integer, ties to even, for |a| < 2^51 (a zero
  // result takes a's sign); larger magnitudes, infinities and NaN take H.roundEven. Inline: a
  // quantizing layer rounds every activation.
  round_nearest_even: (a) =>
    `(Math.abs(${a}) < 2251799813685248 ? ${a} + 6755399441055744 - 6755399441055744 || ${a} * 0 : H.roundEven(${a}))`,
  sign: (a) => `H.signFloat(${a})`,
  is_finite: (a) => `Number.isFinite(${a})`,
  // chlo ops with a direct Math equivalent (the rest live in kernels/special.ts)
  sinh: (a) => `Math.sinh(${a})`,
  cosh: (a) => `Math.cosh(${a})`,
  asin: (a) => `Math.asin(${a})`,
  acos: (a) => `Math.acos(${a})`,
  atan: (a) => `Math.atan(${a})`,
  asinh: (a) => `Math.asinh(${a})`,
  acosh: (a) => `Math.acosh(${a})`,
  atanh: (a) => `Math.atanh(${a})`,
};

export function hasFloatUnary(op: string): boolean {
  return op in FLOAT_UNARY;
}

const COMPARE_OPS: Record<string, string> = { EQ: "===", NE: "!==", LT: "<", LE: "<=", GT: ">", GE: ">=" };

export function compareExpr(direction: string, a: string, b: string): string {
  const js = COMPARE_OPS[direction];
  if (!js) throw unsupported("compare", `comparison direction ${direction}`);
  return `(${a} ${js} ${b})`;
}

/** Convert between element types as XLA does (saturating float -> int, NaN -> 0). */
export function convertExpr(from: ElemType, to: ElemType, a: string): string {
  const df = domainOf(from);
  const dt = domainOf(to);
  if (dt === "bool") return df === "big" ? `(${a} !== 0n)` : `(${a} !== 0)`;
  if (dt === "float") return df === "big" ? `Number(${a})` : a;
  if (dt === "big") {
    if (df === "float") return `H.floatToBig(${a}, ${isUnsignedIntType(to)})`;
    return df === "big" ? a : `BigInt(${a})`;
  }
  // to an integer of at most 32 bits
  if (df === "float") {
    const w = bitWidth(to);
    const [min, max] = isUnsignedIntType(to) ? [0, 2 ** w - 1] : [-(2 ** (w - 1)), 2 ** (w - 1) - 1];
    // H.floatToInt inline (truncate, saturate, NaN -> 0): values inside the range take two
    // well-predicted compares.
    return `(${a} >= ${min} ? (${a} <= ${max} ? Math.trunc(${a}) : ${max}) : ${a} === ${a} ? ${min} : 0)`;
  }
  if (df === "big") return `Number(BigInt.asIntN(32, ${a}))`;
  return a;
}

export function attrString(attrs: Record<string, Attr>, key: string, fallback: string): string {
  const v = attrs[key];
  return typeof v === "string" ? v : fallback;
}

/**
 * Specialised accumulate steps for regions the engine recognised as a plain binary op
 * (RegionInfo.reducer). Each works on raw storage, target[i] = op(target[i], source[j]), and
 * rounds or wraps exactly as the element type's own op would: f32 math in f64 stored to a
 * Float32Array is correctly rounded (53 >= 2*24+2 bits), integer stores wrap modulo 2^width,
 * f16 / bf16 are decoded and re-encoded with round-to-nearest-even.
 */
import { bf16BitsToNumber, f16BitsToNumber, numberToBf16Bits, numberToF16Bits } from "../../elem/half-bits.ts";
import { type ElemType, type ReducerKind, type TypedArray, isBigIntType, isIntegerType } from "../../array.ts";
import { maxFloat, minFloat } from "../../elem/branchless.ts";

export type RawCombine = (target: TypedArray, i: number, source: TypedArray, j: number) => void;

type NumberOp = (a: number, b: number) => number;
type BigOp = (a: bigint, b: bigint) => bigint;

function numberOp(kind: ReducerKind, integer: boolean): NumberOp | null {
  switch (kind) {
    case "add":
      return (a, b) => a + b;
    case "mul":
      return integer ? Math.imul : (a, b) => a * b;
    case "max":
      return integer ? Math.max : maxFloat;
    case "min":
      return integer ? Math.min : minFloat;
    case "and":
      return integer ? (a, b) => a & b : null;
    case "or":
      return integer ? (a, b) => a | b : null;
    case "xor":
      return integer ? (a, b) => a ^ b : null;
    default:
      return null;
  }
}

function bigOp(kind: ReducerKind): BigOp | null {
  switch (kind) {
    case "add":
      return (a, b) => a + b;
    case "mul":
      return (a, b) => a * b;
    case "max":
      // biome-ignore lint/complexity/useMathMinMax: bigint operands; Math.max throws on them
      return (a, b) => (a > b ? a : b);
    case "min":
      // biome-ignore lint/complexity/useMathMinMax: bigint operands; Math.min throws on them
      return (a, b) => (a < b ? a : b);
    case "and":
      return (a, b) => a & b;
    case "or":
      return (a, b) => a | b;
    case "xor":
      return (a, b) => a ^ b;
    default:
      return null;
  }
}

/** The fast accumulate step for `kind` on `type`, or null when the region must be called. */
export function rawCombiner(kind: ReducerKind, type: ElemType): RawCombine | null {
  if (kind === null) return null;
  if (isBigIntType(type)) {
    const op = bigOp(kind);
    return op && ((t, i, s, j) => (t[i] = op(t[i] as bigint, s[j] as bigint)));
  }
  if (type === "i1") {
    const logical: ReducerKind = kind === "max" ? "or" : kind === "min" ? "and" : kind;
    if (logical !== "and" && logical !== "or" && logical !== "xor") return null;
    const op = numberOp(logical, true) as NumberOp;
    return (t, i, s, j) => (t[i] = op(t[i] as number, s[j] as number));
  }
  if (isIntegerType(type) || type === "f32" || type === "f64") {
    const op = numberOp(kind, isIntegerType(type));
    return op && ((t, i, s, j) => (t[i] = op(t[i] as number, s[j] as number)));
  }
  if (type === "f16" || type === "bf16") {
    const op = numberOp(kind, false);
    if (!op) return null;
    const decode = type === "f16" ? f16BitsToNumber : bf16BitsToNumber;
    const encode = type === "f16" ? numberToF16Bits : numberToBf16Bits;
    return (t, i, s, j) => (t[i] = encode(op(decode(t[i] as number), decode(s[j] as number))));
  }
  if ((type === "c64" || type === "c128") && kind === "add") {
    return (t, i, s, j) => {
      t[2 * i] = (t[2 * i] as number) + (s[2 * j] as number);
      t[2 * i + 1] = (t[2 * i + 1] as number) + (s[2 * j + 1] as number);
    };
  }
  return null;
}

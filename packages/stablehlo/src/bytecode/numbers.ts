import { F16_TO_NUMBER, BF16_TO_NUMBER } from "../float16.ts";
import type { ByteReader } from "./byte-reader.ts";
import type { AttrTypeTable } from "./attr-types.ts";
import type { RawAttr, RawType } from "./values.ts";

/**
 * MLIR's APInt of a known width: one byte up to 8 bits, a signed varint up to 64, else a list
 * of signed-varint words. Returned as the two's-complement bits, masked to the width.
 */
export function readAPInt(r: ByteReader, width: number, what: string): bigint {
  if (width <= 8) return BigInt(r.byte(what)) & mask(width);
  if (width <= 64) return BigInt.asUintN(64, r.svarintBig(what)) & mask(width);
  const words = r.count(`the number of words of ${what}`);
  let v = 0n;
  for (let i = 0; i < words; i++) v |= BigInt.asUintN(64, r.svarintBig(what)) << BigInt(64 * i);
  return v & mask(width);
}

function mask(width: number): bigint {
  return (1n << BigInt(width)) - 1n;
}

/** The value of integer bits for a type: sign-extended unless the type is unsigned. */
export function integerValue(bits: bigint, type: RawType): bigint {
  if (type.k === "int" && !type.signed && !type.signless) return bits;
  if (type.k === "bool") return bits & 1n;
  const width = type.k === "int" ? type.width : 64;
  return BigInt.asIntN(width, bits);
}

/** The width in bits of an integer type, or of index (64). */
export function integerWidth(type: RawType): number | null {
  if (type.k === "int") return type.width;
  if (type.k === "index") return 64;
  if (type.k === "bool") return 1;
  return null;
}

export function floatWidth(type: RawType): number | null {
  return type.k === "float" ? type.bits : null;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
const F64 = new Float64Array(1);
const U64 = new BigUint64Array(F64.buffer);

/** The number a float type's bits stand for (f16, bf16, f32, f64 exactly; narrower formats too). */
export function floatValue(bits: bigint, type: RawType): number {
  if (type.k !== "float") return Number.NaN;
  switch (type.name) {
    case "f16":
      return F16_TO_NUMBER[Number(bits)] as number;
    case "bf16":
      return BF16_TO_NUMBER[Number(bits)] as number;
    case "f32":
      U32[0] = Number(bits);
      return F32[0] as number;
    case "f64":
      U64[0] = bits;
      return F64[0] as number;
    default:
      return minifloat(Number(bits), type.name);
  }
}

/** [exponent bits, mantissa bits, bias, has infinities, NaN encoding] of the narrow formats. */
const MINIFLOATS: Record<string, [number, number, number, "ieee" | "fn" | "fnuz"]> = {
  f8E5M2: [5, 2, 15, "ieee"],
  f8E4M3: [4, 3, 7, "ieee"],
  f8E3M4: [3, 4, 3, "ieee"],
  f8E4M3FN: [4, 3, 7, "fn"],
  f8E5M2FNUZ: [5, 2, 16, "fnuz"],
  f8E4M3FNUZ: [4, 3, 8, "fnuz"],
  f8E4M3B11FNUZ: [4, 3, 11, "fnuz"],
  f6E2M3FN: [2, 3, 1, "fn"],
  f6E3M2FN: [3, 2, 3, "fn"],
  f4E2M1FN: [2, 1, 1, "fn"],
};

function minifloat(bits: number, name: string): number {
  if (name === "f8E8M0FNU") return bits === 0xff ? Number.NaN : 2 ** (bits - 127);
  if (name === "tf32") {
    U32[0] = bits << 13;
    return F32[0] as number;
  }
  const spec = MINIFLOATS[name];
  if (!spec) return Number.NaN;
  const [e, m, bias, kind] = spec;
  const sign = (bits >> (e + m)) & 1 ? -1 : 1;
  const exp = (bits >> m) & ((1 << e) - 1);
  const frac = bits & ((1 << m) - 1);
  const maxExp = (1 << e) - 1;
  if (kind === "fnuz" && sign < 0 && exp === 0 && frac === 0) return Number.NaN;
  if (kind === "ieee" && exp === maxExp) return frac === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  if (kind === "fn" && e + m === 7 && exp === maxExp && frac === (1 << m) - 1) return Number.NaN;
  if (exp === 0) return sign * frac * 2 ** (1 - bias - m);
  return sign * (1 + frac / (1 << m)) * 2 ** (exp - bias);
}

/** `type, APInt`: an integer attribute (builtin or integer_v1), `width` picked from its type. */
export function readIntegerAttr(
  r: ByteReader,
  t: AttrTypeTable,
  widthOf: (type: RawType) => number | null,
  what: string,
): RawAttr {
  const at = r.pos;
  const type = t.type(r);
  const width = widthOf(type);
  if (width === null) throw r.fail(`an integer type for ${what}`, at);
  return { k: "int", type, value: integerValue(readAPInt(r, width, `${what}'s value`), type) };
}

/** `type, APFloat`: a float attribute (builtin or float_v1). */
export function readFloatAttr(r: ByteReader, t: AttrTypeTable, what: string): RawAttr {
  const at = r.pos;
  const type = t.type(r);
  const width = floatWidth(type);
  if (width === null) throw r.fail(`a float type for ${what}`, at);
  return { k: "float", type, value: floatValue(readAPInt(r, width, `${what}'s value`), type) };
}

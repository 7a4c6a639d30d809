/**
 * Element types and dense storage: how a tensor literal (a `dense<...>` attribute, a constant,
 * a weight) is held in memory. The CPU engine computes on the same layout, so a constant read
 * from a module reaches its kernels without conversion.
 *
 * - `NDArray` is dense and row-major (last axis fastest); `shape` is never aliased between
 *   arrays, so a consumer may keep it. A rank-0 array has shape [] and one element.
 * - Storage per element type (the `data` field):
 *     i1                      Uint8Array, 0 or 1
 *     i2, i4, i8              Int8Array (sub-byte ints widened, value kept sign-extended)
 *     ui2, ui4, ui8           Uint8Array (value kept in range)
 *     i16 / ui16              Int16Array / Uint16Array
 *     i32 / ui32              Int32Array / Uint32Array
 *     i64 / ui64              BigInt64Array / BigUint64Array (the only BigInt storage)
 *     f16, bf16               Uint16Array of the raw IEEE / bfloat16 bits
 *     f8* types               Uint8Array of the raw bits
 *     f32 / f64               Float32Array / Float64Array
 *     c64 / c128              Float32Array / Float64Array interleaved (re, im), length 2*count
 */
import { encodeBf16, encodeF16 } from "./float16.ts";

export const ELEM_TYPES = [
  "i1",
  "i2",
  "i4",
  "i8",
  "i16",
  "i32",
  "i64",
  "ui2",
  "ui4",
  "ui8",
  "ui16",
  "ui32",
  "ui64",
  "f8E4M3FN",
  "f8E5M2",
  "f8E4M3FNUZ",
  "f8E5M2FNUZ",
  "f8E4M3B11FNUZ",
  "f8E4M3",
  "f8E3M4",
  "f16",
  "bf16",
  "f32",
  "f64",
  "c64",
  "c128",
] as const;

export type ElemType = (typeof ELEM_TYPES)[number];

/** Host storage: the typed arrays tensors live in (the set core's host tensors use too). */
export type TypedArray =
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

export interface NDArray {
  readonly type: ElemType;
  readonly shape: number[];
  readonly data: TypedArray;
}

export function isComplexType(type: ElemType): boolean {
  return type === "c64" || type === "c128";
}

export function isFloatType(type: ElemType): boolean {
  return type === "f16" || type === "bf16" || type === "f32" || type === "f64" || type.startsWith("f8");
}

export function isSignedIntType(type: ElemType): boolean {
  return type === "i2" || type === "i4" || type === "i8" || type === "i16" || type === "i32" || type === "i64";
}

export function isUnsignedIntType(type: ElemType): boolean {
  return type === "ui2" || type === "ui4" || type === "ui8" || type === "ui16" || type === "ui32" || type === "ui64";
}

export function isIntegerType(type: ElemType): boolean {
  return isSignedIntType(type) || isUnsignedIntType(type);
}

/** i64 / ui64: the types stored as BigInt. */
export function isBigIntType(type: ElemType): boolean {
  return type === "i64" || type === "ui64";
}

/** Bit width of one element (complex: the whole pair). */
export function bitWidth(type: ElemType): number {
  switch (type) {
    case "i1":
      return 1;
    case "i2":
    case "ui2":
      return 2;
    case "i4":
    case "ui4":
      return 4;
    case "i8":
    case "ui8":
      return 8;
    case "i16":
    case "ui16":
    case "f16":
    case "bf16":
      return 16;
    case "i32":
    case "ui32":
    case "f32":
      return 32;
    case "i64":
    case "ui64":
    case "f64":
    case "c64":
      return 64;
    case "c128":
      return 128;
    default:
      return 8; // every f8 variant
  }
}

/** Number of typed-array slots one element occupies (2 for complex). */
export function slotsPerElement(type: ElemType): number {
  return isComplexType(type) ? 2 : 1;
}

/** Bytes one element takes in host storage (sub-byte ints take a byte). */
export function storageBytes(type: ElemType): number {
  switch (type) {
    case "c64":
      return 8;
    case "c128":
      return 16;
    case "i1":
    case "i2":
    case "ui2":
    case "i4":
    case "ui4":
      return 1;
    default:
      return bitWidth(type) / 8;
  }
}

export function elementCount(shape: readonly number[]): number {
  // Indexed, not for-of: kernels call this per operand on every run, and the iterator
  // protocol costs more than the product of a few dimensions in the lower JIT tiers.
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i] as number;
  return n;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let d = 0; d < a.length; d++) if (a[d] !== b[d]) return false;
  return true;
}

/** Row-major strides in elements (not slots): strides[i] = product of shape[i+1..]. */
export function strides(shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    out[i] = s;
    s *= shape[i] as number;
  }
  return out;
}

/** A zero-filled typed array for `count` elements of `type`. */
export function allocData(type: ElemType, count: number): TypedArray {
  switch (type) {
    case "i1":
    case "ui2":
    case "ui4":
    case "ui8":
      return new Uint8Array(count);
    case "i2":
    case "i4":
    case "i8":
      return new Int8Array(count);
    case "i16":
      return new Int16Array(count);
    case "ui16":
    case "f16":
    case "bf16":
      return new Uint16Array(count);
    case "i32":
      return new Int32Array(count);
    case "ui32":
      return new Uint32Array(count);
    case "i64":
      return new BigInt64Array(count);
    case "ui64":
      return new BigUint64Array(count);
    case "f32":
      return new Float32Array(count);
    case "f64":
      return new Float64Array(count);
    case "c64":
      return new Float32Array(2 * count);
    case "c128":
      return new Float64Array(2 * count);
    default:
      return new Uint8Array(count); // f8 raw bits
  }
}

/** A zero-filled array (all bits zero: 0, +0.0, false). */
export function alloc(type: ElemType, shape: readonly number[]): NDArray {
  return { type, shape: [...shape], data: allocData(type, elementCount(shape)) };
}

/** Wraps existing storage; checks the length so a kernel bug surfaces at once. */
export function wrap(type: ElemType, shape: readonly number[], data: TypedArray): NDArray {
  const expected = elementCount(shape) * slotsPerElement(type);
  if (data.length !== expected) {
    throw new RangeError(`${type}[${shape.join(",")}] needs ${expected} slots, got ${data.length}`);
  }
  return { type, shape: [...shape], data };
}

/** Bytes of storage an array holds (for the engine's memory accounting). */
export function byteSize(array: NDArray): number {
  return array.data.byteLength;
}

/** Wraps an integer into a sub-byte type's range (storage keeps i2/i4 sign-extended). */
export function wrapSubByte(type: ElemType, v: number): number {
  switch (type) {
    case "i2":
      return (v << 30) >> 30;
    case "i4":
      return (v << 28) >> 28;
    case "ui2":
      return v & 3;
    case "ui4":
      return v & 15;
    case "i1":
      return v & 1;
    default:
      return v;
  }
}

export function isSubByte(type: ElemType): boolean {
  return type === "i2" || type === "i4" || type === "ui2" || type === "ui4";
}

/**
 * Stores a real number into element i of a non-complex array, rounding (f16 / bf16, to
 * nearest even) or wrapping (integers) it into the element type.
 */
export function storeNumber(a: NDArray, i: number, v: number | bigint): void {
  const d = a.data;
  switch (a.type) {
    case "f16":
      d[i] = encodeF16(Number(v));
      return;
    case "bf16":
      d[i] = encodeBf16(Number(v));
      return;
    case "i64":
      (d as BigInt64Array)[i] = typeof v === "bigint" ? v : BigInt(Math.trunc(Number(v)));
      return;
    case "ui64":
      (d as BigUint64Array)[i] = typeof v === "bigint" ? v : BigInt(Math.trunc(Number(v)));
      return;
    default:
      (d as Float64Array)[i] = wrapSubByte(a.type, Number(v));
  }
}

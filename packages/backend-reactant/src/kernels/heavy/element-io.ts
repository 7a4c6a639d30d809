/**
 * Conversions between NDArray storage and the working formats the heavy kernels compute in:
 * f32 / f64 buffers for BLAS, int32 bit patterns for modular integer math, BigInt for 64-bit
 * integers, and the region callbacks' Scalar values.
 */
import { F16_TO_NUMBER, encodeF16 } from "@xlaserve/stablehlo/float16.ts";
import {
  bf16BitsToNumber,
  f16BitsToNumber,
  fastEncodeF16,
  numberToBf16Bits,
  numberToF16Bits,
} from "../../elem/half-bits.ts";
import {
  type ElemType,
  type NDArray,
  type Scalar,
  type TypedArray,
  elementCount,
  isBigIntType,
  isComplexType,
} from "../../array.ts";
import { unsupported } from "./errors.ts";

export function isF8(type: ElemType): boolean {
  return type.startsWith("f8");
}

/** Real values as f64 (ints exact up to 2^53, f16/bf16 decoded). Complex and f8 are refused. */
export function toFloat64(array: NDArray, op: string): Float64Array {
  if (array.data instanceof Float64Array && array.type === "f64") return array.data;
  const n = elementCount(array.shape);
  const out = new Float64Array(new ArrayBuffer(n * 8));
  fillNumbers(array, out, op);
  return out;
}

/** Real values as f32 (used for f32 / f16 / bf16 math, which XLA also does in f32). */
export function toFloat32(array: NDArray, op: string): Float32Array {
  if (array.data instanceof Float32Array && array.type === "f32") return array.data;
  const n = elementCount(array.shape);
  const out = new Float32Array(new ArrayBuffer(n * 4));
  fillNumbers(array, out, op);
  return out;
}

/**
 * Real values as f32 in `scratch` when it is long enough (else in a new array), for kernels that
 * widen an operand once per call and drop it before they return; f32 data is returned as is.
 */
export function toFloat32Scratch(array: NDArray, scratch: Float32Array, op: string): Float32Array {
  if (array.data instanceof Float32Array && array.type === "f32") return array.data;
  const n = elementCount(array.shape);
  const out = scratch.length >= n ? scratch.subarray(0, n) : new Float32Array(new ArrayBuffer(n * 4));
  fillNumbers(array, out, op);
  return out;
}

/** fromFloats into given storage of `values.length` elements of a float type. */
export function storeFloats(type: ElemType, values: Float32Array, out: TypedArray, op: string): void {
  if (type === "f32") (out as Float32Array).set(values);
  else if (type === "bf16") narrowToBf16(values, out as Uint16Array);
  else if (type === "f16") narrowToF16(values, out as Uint16Array);
  else if (type === "f64") (out as Float64Array).set(values);
  else throw unsupported(op, `cannot store floating-point results as ${type}`);
}

function fillNumbers(array: NDArray, out: Float32Array | Float64Array, op: string): void {
  const { type, data } = array;
  const n = out.length;
  if (isComplexType(type) || isF8(type)) throw unsupported(op, `element type ${type} has no real-valued path here`);
  if (type === "bf16" && out instanceof Float32Array) widenBf16(data as Uint16Array, out);
  else if (type === "f16" && out instanceof Float32Array) widenF16(data as Uint16Array, out);
  else if (type === "f16") for (let i = 0; i < n; i++) out[i] = f16BitsToNumber(data[i] as number);
  else if (type === "bf16") for (let i = 0; i < n; i++) out[i] = bf16BitsToNumber(data[i] as number);
  else if (isBigIntType(type)) for (let i = 0; i < n; i++) out[i] = Number(data[i] as bigint);
  else {
    // TypedArray.prototype.set converts each element as the assignment out[i] = data[i] does
    // (to the nearest f32, ties to even), but in one native loop: the JavaScript loop over an
    // array of any element type ran at tens of ns an element, as long as a quantized layer's GEMM.
    const numbers = data as Exclude<TypedArray, BigInt64Array | BigUint64Array>;
    out.set(numbers.length === n ? numbers : numbers.subarray(0, n));
  }
}

/**
 * bf16 is the top half of an f32: widening is a shift of the bits, exact for every value. The
 * bits go through Int32Array views here and below: a Uint32Array element of 2^31 or more (every
 * negative float) reads as a double, not an integer, and slows the loop by a fifth.
 */
function widenBf16(data: Uint16Array, out: Float32Array): void {
  const bits = new Int32Array(out.buffer, out.byteOffset, out.length);
  const n = bits.length;
  for (let i = 0; i < n; i++) bits[i] = (data[i] as number) << 16;
}

/** f16's values as f32 bits, by f16 bits: widening copies 32-bit words instead of floats. */
const F16_AS_F32_BITS = new Uint32Array(F16_TO_NUMBER.buffer, F16_TO_NUMBER.byteOffset, F16_TO_NUMBER.length);

function widenF16(data: Uint16Array, out: Float32Array): void {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < bits.length; i++) bits[i] = F16_AS_F32_BITS[data[i] as number] as number;
}

/**
 * f32 values to f16 bits, rounded to nearest even on the bits of the f32 value itself (no
 * scratch store and load per element, as fastEncodeF16 needs for an f64): f16's normal range
 * (f32 exponents 113..142) rounds by adding half an f16 step less one plus the kept lowest bit;
 * zeros, subnormals and overflow take encodeF16, as fastEncodeF16 does for the same values,
 * and a NaN is 0x7e00, the canonical f16 NaN the SIMD loops store too.
 */
function narrowToF16(values: Float32Array, out: Uint16Array): void {
  const bits = new Int32Array(values.buffer, values.byteOffset, values.length);
  const n = bits.length;
  for (let i = 0; i < n; i++) {
    const u = bits[i] as number;
    const e = (u >>> 23) & 0xff;
    if (e < 113 || e > 142) {
      // A NaN from its bits: read as a number, its sign is whatever the JIT tier left there.
      out[i] = (u & 0x7fffffff) > 0x7f800000 ? 0x7e00 : encodeF16(values[i] as number);
      continue;
    }
    const r = (u & 0x7fffffff) + 0xfff + ((u >>> 13) & 1);
    out[i] = ((u >>> 16) & 0x8000) | ((r >>> 13) - (112 << 10));
  }
}

/**
 * f32 values to bf16 bits, rounded to nearest even on the bits (f32 -> bf16 rounds once, as
 * numberToBf16Bits does after its Math.fround); a NaN (exponent all ones, mantissa set) keeps its
 * sign and top bits, made quiet, as numberToBf16Bits makes it; infinities round to themselves.
 */
function narrowToBf16(values: Float32Array, out: Uint16Array): void {
  const bits = new Int32Array(values.buffer, values.byteOffset, values.length);
  const n = bits.length;
  for (let i = 0; i < n; i++) {
    const u = bits[i] as number;
    if ((u & 0x7fffffff) > 0x7f800000) {
      // Quiet, sign kept, from its bits (see narrowToF16).
      out[i] = ((u >>> 16) | 0x40) & 0xffff;
      continue;
    }
    // The sum wraps as 32 bits (| 0) and the store keeps the low 16 bits of the shift: the
    // same bits as the unsigned sum's top half, without the sum leaving the int32 range.
    out[i] = ((u + 0x7fff + ((u >>> 16) & 1)) | 0) >> 16;
  }
}

/** Stores real values (f32 or f64 computed) in a float type's storage, rounding to nearest even. */
export function fromFloats(type: ElemType, values: Float32Array | Float64Array, op: string): TypedArray {
  const n = values.length;
  switch (type) {
    case "f32":
      return values instanceof Float32Array ? values : Float32Array.from(values);
    case "f64":
      return values instanceof Float64Array ? values : Float64Array.from(values);
    case "f16": {
      const out = new Uint16Array(n);
      if (values instanceof Float32Array) narrowToF16(values, out);
      else
        for (let i = 0; i < n; i++) {
          const v = values[i] as number;
          out[i] = Number.isNaN(v) ? numberToF16Bits(v) : fastEncodeF16(v);
        }
      return out;
    }
    case "bf16": {
      const out = new Uint16Array(n);
      if (values instanceof Float32Array) narrowToBf16(values, out);
      else for (let i = 0; i < n; i++) out[i] = numberToBf16Bits(values[i] as number);
      return out;
    }
    default:
      throw unsupported(op, `cannot store floating-point results as ${type}`);
  }
}

/** Integer (or i1) values as int32 bit patterns: exact modulo 2^32, enough for results up to 32 bits. */
export function toInt32Bits(array: NDArray, op: string): Int32Array {
  if (array.data instanceof Int32Array) return array.data;
  const n = elementCount(array.shape);
  const out = new Int32Array(n);
  const { data, type } = array;
  if (isBigIntType(type)) for (let i = 0; i < n; i++) out[i] = Number(BigInt.asIntN(32, data[i] as bigint));
  else if (data instanceof Float32Array || data instanceof Float64Array || type === "f16" || type === "bf16")
    throw unsupported(op, `expected integer operands, got ${type}`);
  else for (let i = 0; i < n; i++) out[i] = data[i] as number;
  return out;
}

/** Integer values as BigInt (exact for every integer type). */
export function toBigInts(array: NDArray): BigInt64Array | BigUint64Array {
  if (array.data instanceof BigInt64Array || array.data instanceof BigUint64Array) return array.data;
  const n = elementCount(array.shape);
  const out = new BigInt64Array(n);
  for (let i = 0; i < n; i++) out[i] = BigInt(array.data[i] as number);
  return out;
}

/**
 * Reads element `index` as a region sees it. Kept monomorphic-friendly by switching once on
 * the type when building a reader (see `scalarReader`).
 */
export type ScalarReader = (index: number) => Scalar;
export type ScalarWriter = (index: number, value: Scalar) => void;

export function scalarReader(array: NDArray): ScalarReader {
  const { type, data } = array;
  if (type === "f16") return (i) => f16BitsToNumber(data[i] as number);
  if (type === "bf16") return (i) => bf16BitsToNumber(data[i] as number);
  if (isComplexType(type)) return (i) => [data[2 * i] as number, data[2 * i + 1] as number];
  if (isF8(type)) throw unsupported("region", `element type ${type} cannot be passed to a region`);
  return (i) => data[i] as number | bigint;
}

export function scalarWriter(array: { type: ElemType; data: TypedArray }): ScalarWriter {
  const { type, data } = array;
  if (type === "f16") return (i, v) => (data[i] = numberToF16Bits(v as number));
  if (type === "bf16") return (i, v) => (data[i] = numberToBf16Bits(v as number));
  if (isComplexType(type))
    return (i, v) => {
      const pair = v as [number, number];
      data[2 * i] = pair[0];
      data[2 * i + 1] = pair[1];
    };
  if (type === "i1") return (i, v) => (data[i] = Number(v) !== 0 ? 1 : 0);
  if (isBigIntType(type)) return (i, v) => (data[i] = typeof v === "bigint" ? v : BigInt(v as number));
  return (i, v) => (data[i] = Number(v));
}

/** A copy of an array's storage (kernels never mutate their inputs). */
export function copyData(array: NDArray): TypedArray {
  return array.data.slice() as TypedArray;
}

import type { ElemType, NDArray, Scalar } from "../array.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER, encodeBf16, encodeF16 } from "./float16.ts";

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

/** One element as a Scalar (see array.ts for the convention). */
export function readScalar(a: NDArray, i: number): Scalar {
  const d = a.data;
  switch (a.type) {
    case "f16":
      return F16_TO_NUMBER[d[i] as number] as number;
    case "bf16":
      return BF16_TO_NUMBER[d[i] as number] as number;
    case "c64":
    case "c128":
      return [d[2 * i] as number, d[2 * i + 1] as number];
    default:
      return d[i] as number | bigint;
  }
}

/** Stores a Scalar, rounding / wrapping it into the element type. */
export function writeScalar(a: NDArray, i: number, v: Scalar): void {
  const d = a.data;
  switch (a.type) {
    case "f16":
      d[i] = encodeF16(Number(v));
      return;
    case "bf16":
      d[i] = encodeBf16(Number(v));
      return;
    case "c64":
    case "c128": {
      const [re, im] = Array.isArray(v) ? v : [Number(v), 0];
      d[2 * i] = re;
      d[2 * i + 1] = im;
      return;
    }
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

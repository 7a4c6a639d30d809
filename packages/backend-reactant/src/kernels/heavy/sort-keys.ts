/**
 * Keys for sort's fast path: each element becomes a (primary, secondary) pair of numbers whose
 * lexicographic order is the wanted order. With totalOrder, floats follow IEEE totalOrder
 * (-NaN < -Inf < ... < -0 < +0 < ... < Inf < NaN), read from raw bits so NaN and zero signs
 * count; without it they compare as plain numbers (NaN never before anything, like LT).
 */
import type { NDArray } from "../../array.ts";
import { unsupported } from "./errors.ts";

export interface SortKeys {
  readonly primary: Float64Array;
  /** Breaks ties of primary; null when primary is exact on its own. */
  readonly secondary: Float64Array | null;
}

/** Maps a sign-magnitude bit pattern to an unsigned one that orders as totalOrder does. */
function totalOrderKey(bits: number, signBit: number): number {
  return bits >= signBit ? 2 * signBit - 1 - bits : bits + signBit;
}

/** Keys for every element of `array`, in storage order. */
export function sortKeys(array: NDArray, totalOrder: boolean): SortKeys {
  const { type, data } = array;
  const n = type === "c64" || type === "c128" ? 0 : data.length;
  const primary = new Float64Array(n);
  if (type === "f32" && totalOrder) {
    const bits = new Uint32Array(data.buffer, data.byteOffset, n);
    for (let i = 0; i < n; i++) primary[i] = totalOrderKey(bits[i] as number, 0x80000000);
    return { primary, secondary: null };
  }
  if (type === "f64" && totalOrder) {
    const high = new Uint32Array(data.buffer, data.byteOffset, 2 * n);
    const secondary = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const value = data[i] as number;
      const negative = (high[2 * i + 1] as number) >= 0x80000000;
      if (Number.isNaN(value)) {
        primary[i] = negative ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
        secondary[i] = negative ? -1 : 1;
      } else {
        primary[i] = value;
        secondary[i] = value === 0 && negative ? -1 : 0;
      }
    }
    return { primary, secondary };
  }
  if (type === "f16" || type === "bf16") {
    if (!totalOrder) throw unsupported("sort", `the ${type} fast path needs total order`);
    for (let i = 0; i < n; i++) primary[i] = totalOrderKey(data[i] as number, 0x8000);
    return { primary, secondary: null };
  }
  if (type === "i64" || type === "ui64") {
    const secondary = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const v = data[i] as bigint;
      primary[i] = Number(v >> 32n);
      secondary[i] = Number(v & 0xffffffffn);
    }
    return { primary, secondary };
  }
  if (type === "c64" || type === "c128" || type.startsWith("f8"))
    throw unsupported("sort", `no fast sort keys for ${type}`);
  for (let i = 0; i < n; i++) primary[i] = data[i] as number;
  return { primary, secondary: null };
}

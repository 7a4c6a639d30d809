/** Reverses chosen axes of raw row-major storage (window_reversal, stablehlo.reverse-like). */
import type { TypedArray } from "../../array.ts";
import { bitExact, sameKind } from "./permute.ts";

export function reverseAxes<T extends TypedArray>(
  data: T,
  shape: readonly number[],
  axes: readonly number[],
  elementSlots = 1,
): T {
  if (axes.length === 0) return data;
  const { view: source, slots } = bitExact(data, elementSlots);
  const rank = shape.length;
  const out = sameKind(data, data.length);
  const count = source.length / slots;
  const index = new Array<number>(rank).fill(0);
  const reversed = shape.map((_, axis) => axes.includes(axis));
  const stride = new Array<number>(rank);
  for (let a = rank - 1, s = slots; a >= 0; a--) {
    stride[a] = s;
    s *= shape[a] as number;
  }
  const src = source as unknown as { [i: number]: unknown };
  const dst = bitExact(out, elementSlots).view as unknown as { [i: number]: unknown };
  for (let e = 0; e < count; e++) {
    let from = 0;
    for (let a = 0; a < rank; a++) {
      const i = index[a] as number;
      from += (reversed[a] ? (shape[a] as number) - 1 - i : i) * (stride[a] as number);
    }
    for (let q = 0; q < slots; q++) dst[e * slots + q] = src[from + q];
    for (let a = rank - 1; a >= 0; a--) {
      index[a] = (index[a] as number) + 1;
      if ((index[a] as number) < (shape[a] as number)) break;
      index[a] = 0;
    }
  }
  return out;
}

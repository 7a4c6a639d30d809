import { type NDArray, allocData, bitWidth, elementCount, isBigIntType, isUnsignedIntType } from "../array.ts";
import { unsupported } from "./errors.ts";

/** chlo.mulhi: the high half of the double-width product of two integers. */
export function mulhi(a: NDArray, b: NDArray): NDArray {
  if (a.type === "i1" || !(isUnsignedIntType(a.type) || /^i\d+$/.test(a.type))) {
    throw unsupported("mulhi", `mulhi on ${a.type}`);
  }
  const width = BigInt(bitWidth(a.type));
  const unsigned = isUnsignedIntType(a.type);
  const n = Math.max(elementCount(a.shape), elementCount(b.shape));
  const sa = elementCount(a.shape) === 1 ? 0 : 1;
  const sb = elementCount(b.shape) === 1 ? 0 : 1;
  const out = allocData(a.type, n);
  const big = isBigIntType(a.type);
  for (let i = 0; i < n; i++) {
    const product = BigInt(a.data[sa * i] as number | bigint) * BigInt(b.data[sb * i] as number | bigint);
    const high = unsigned
      ? BigInt.asUintN(Number(width), product >> width)
      : BigInt.asIntN(Number(width), product >> width);
    if (big) (out as BigInt64Array)[i] = high;
    else (out as Int32Array)[i] = Number(high);
  }
  return { type: a.type, shape: sa === 0 ? [...b.shape] : [...a.shape], data: out };
}

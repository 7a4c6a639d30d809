import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { isSubByte, storeNumber, wrapSubByte } from "@xlaserve/stablehlo/elements.ts";
import type { NDArray, Scalar } from "../array.ts";

export { isSubByte, wrapSubByte };

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
  if (a.type === "c64" || a.type === "c128") {
    const [re, im] = Array.isArray(v) ? v : [Number(v), 0];
    a.data[2 * i] = re;
    a.data[2 * i + 1] = im;
    return;
  }
  storeNumber(a, i, v as number | bigint);
}

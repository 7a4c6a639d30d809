/** reduce_window exactly as the spec writes it: pad with init, dilate, slice, reduce. */
import type { ReduceWindowAttributes } from "../../src/kernels/heavy/index.ts";
import { count, forEachIndex, offsetOf } from "./helpers.ts";

export function naiveReduceWindow(
  shape: number[],
  data: ArrayLike<number>,
  init: number,
  attrs: Required<ReduceWindowAttributes>,
  op: (a: number, b: number) => number,
): { shape: number[]; data: number[] } {
  const rank = shape.length;
  // Materialise the padded, base-dilated input (holes and padding hold init).
  const padded = shape.map(
    (s, d) =>
      (s === 0 ? 0 : (s - 1) * (attrs.baseDilations[d] as number) + 1) +
      (attrs.padding[d] as [number, number])[0] +
      (attrs.padding[d] as [number, number])[1],
  );
  const big = new Array<number>(count(padded.map((p) => Math.max(p, 0)))).fill(init);
  forEachIndex(shape, (index, linear) => {
    const at = index.map((i, d) => i * (attrs.baseDilations[d] as number) + (attrs.padding[d] as [number, number])[0]);
    if (at.every((x, d) => x >= 0 && x < (padded[d] as number))) big[offsetOf(padded, at)] = data[linear] as number;
  });
  const outShape = padded.map((p, d) => {
    const span = ((attrs.windowDimensions[d] as number) - 1) * (attrs.windowDilations[d] as number) + 1;
    return p < span ? 0 : Math.floor((p - span) / (attrs.windowStrides[d] as number)) + 1;
  });
  const out: number[] = [];
  forEachIndex(outShape, (oi) => {
    let acc = init;
    forEachIndex([...attrs.windowDimensions], (wi) => {
      const at = new Array<number>(rank);
      for (let d = 0; d < rank; d++)
        at[d] =
          (oi[d] as number) * (attrs.windowStrides[d] as number) +
          (wi[d] as number) * (attrs.windowDilations[d] as number);
      acc = op(acc, big[offsetOf(padded, at)] as number);
    });
    out.push(acc);
  });
  return { shape: outShape, data: out };
}

/**
 * reduce_window's general-region path, evaluated a window tap at a time over every output
 * position at once through the region's batched form: per tap, gather each input's element
 * under that tap for all outputs, run the region once on (accumulators, gathered), and keep
 * the new accumulator wherever the tap landed on a real element (padding and dilation holes
 * leave it unchanged). Each output still folds its taps in row-major order, exactly as the
 * per-element path does, but with one region call per tap instead of one per element.
 */
import { type NDArray, type RegionInfo, alloc, elementCount, slotsPerElement, strides } from "../../array.ts";
import { bitExact } from "./permute.ts";
import { type WindowGeometry, nextIndex, tapOffsets } from "./window-geometry.ts";

/** Copies element `from` of `src` to element `to` of `dst`, bit for bit. */
export function copier(src: NDArray, dst: NDArray): (from: number, to: number) => void {
  const s = bitExact(src.data, slotsPerElement(src.type));
  const d = bitExact(dst.data, slotsPerElement(dst.type)).view;
  const q = s.slots;
  const sv = s.view as unknown as { [i: number]: unknown };
  const dv = d as unknown as { [i: number]: unknown };
  return (from, to) => {
    for (let k = 0; k < q; k++) dv[to * q + k] = sv[from * q + k];
  };
}

/** Folds every tap into `results` (which hold the init values) with batched region calls. */
export function batchedRegionReduce(
  g: WindowGeometry,
  inputs: readonly NDArray[],
  results: NDArray[],
  body: RegionInfo,
): void {
  const outCount = elementCount(g.outShape);
  const rank = g.outShape.length;
  const inStrides = strides(g.inShape);
  const offsets = new Int32Array(outCount);
  const tap = new Array<number>(rank).fill(0);
  const taps = g.window.reduce((p, w) => p * w, 1);
  for (let t = 0; t < taps; t++, nextIndex(tap, g.window)) {
    if (!tapOffsets(g, tap, inStrides, offsets)) continue;
    const gathered = inputs.map((input) => {
      const out = alloc(input.type, g.outShape);
      const copy = copier(input, out);
      for (let o = 0; o < outCount; o++) if ((offsets[o] as number) >= 0) copy(offsets[o] as number, o);
      return out;
    });
    const next = body.batched([...results, ...gathered]);
    // Never keep the region's arrays: they may be shared (a returned constant or argument).
    results.forEach((acc, k) => {
      const produced = next[k] as NDArray;
      const copy = copier(produced, acc);
      const broadcast = elementCount(produced.shape) === 1;
      for (let o = 0; o < outCount; o++) if ((offsets[o] as number) >= 0) copy(broadcast ? 0 : o, o);
    });
  }
}

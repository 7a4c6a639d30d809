/**
 * Window arithmetic shared by reduce_window and select_and_scatter: output sizes and, per
 * axis, which input index each (output index, window tap) reads once base dilation and
 * padding are applied (-1 for padding and dilation holes, which XLA skips).
 */
import { checkLength, invalid } from "./errors.ts";

export interface WindowAttributes {
  readonly windowDimensions: readonly number[];
  /** Defaults: strides 1, dilations 1, padding [0, 0] per axis. */
  readonly windowStrides?: readonly number[];
  readonly baseDilations?: readonly number[];
  readonly windowDilations?: readonly number[];
  /** [low, high] per axis; may be negative. */
  readonly padding?: readonly (readonly [number, number])[];
}

export interface WindowGeometry {
  readonly inShape: readonly number[];
  readonly outShape: number[];
  readonly window: readonly number[];
  /** Per axis, [out * window + tap] -> input index or -1. */
  readonly tables: Int32Array[];
}

export function windowGeometry(op: string, inShape: readonly number[], attrs: WindowAttributes): WindowGeometry {
  const rank = inShape.length;
  const ones = new Array<number>(rank).fill(1);
  const window = attrs.windowDimensions;
  const strides = attrs.windowStrides ?? ones;
  const baseDil = attrs.baseDilations ?? ones;
  const winDil = attrs.windowDilations ?? ones;
  const padding = attrs.padding ?? ones.map(() => [0, 0] as const);
  checkLength(op, "window_dimensions", window, rank);
  checkLength(op, "window_strides", strides, rank);
  checkLength(op, "base_dilations", baseDil, rank);
  checkLength(op, "window_dilations", winDil, rank);
  checkLength(op, "padding", padding, rank);
  for (const [what, values] of [
    ["window_dimensions", window],
    ["window_strides", strides],
    ["base_dilations", baseDil],
    ["window_dilations", winDil],
  ] as const) {
    for (const v of values)
      if (!Number.isInteger(v) || v < 1) throw invalid(op, `${what} must be positive integers, got [${values}]`);
  }
  const outShape = inShape.map((size, d) => {
    const [lo, hi] = padding[d] as readonly [number, number];
    const padded = (size === 0 ? 0 : (size - 1) * (baseDil[d] as number) + 1) + lo + hi;
    const span = ((window[d] as number) - 1) * (winDil[d] as number) + 1;
    return padded < span ? 0 : Math.floor((padded - span) / (strides[d] as number)) + 1;
  });
  const tables = outShape.map((outSize, d) => {
    const taps = window[d] as number;
    const table = new Int32Array(outSize * taps);
    const lo = (padding[d] as readonly [number, number])[0];
    const dil = baseDil[d] as number;
    for (let o = 0; o < outSize; o++) {
      for (let k = 0; k < taps; k++) {
        const x = o * (strides[d] as number) + k * (winDil[d] as number) - lo;
        table[o * taps + k] = x >= 0 && x % dil === 0 && x / dil < (inShape[d] as number) ? x / dil : -1;
      }
    }
    return table;
  });
  return { inShape, outShape, window, tables };
}

/**
 * Calls visit(inputOffset) for each window tap of output position `outIndex` that lands on a
 * real input element, in row-major tap order. `inStrides` are the input's element strides.
 */
export function forEachTap(
  g: WindowGeometry,
  outIndex: readonly number[],
  inStrides: readonly number[],
  tap: number[],
  visit: (inputOffset: number) => void,
): void {
  const taps = g.window.reduce((p, w) => p * w, 1);
  tap.fill(0);
  for (let t = 0; t < taps; t++) {
    const offset = tapInputOffset(g, outIndex, tap, inStrides);
    if (offset >= 0) visit(offset);
    nextIndex(tap, g.window);
  }
}

/** Input element offset of output position `outIndex` under tap `tap`; -1 where it falls outside the input. */
function tapInputOffset(
  g: WindowGeometry,
  outIndex: readonly number[],
  tap: readonly number[],
  inStrides: readonly number[],
): number {
  let offset = 0;
  for (let d = 0; d < g.window.length; d++) {
    const at = (g.tables[d] as Int32Array)[
      (outIndex[d] as number) * (g.window[d] as number) + (tap[d] as number)
    ] as number;
    if (at < 0) return -1;
    offset += at * (inStrides[d] as number);
  }
  return offset;
}

/** Advances a row-major multi-index; false once it wraps past the end. */
export function nextIndex(index: number[], shape: readonly number[]): boolean {
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = (index[d] as number) + 1;
    if ((index[d] as number) < (shape[d] as number)) return true;
    index[d] = 0;
  }
  return false;
}

/** Input offset under tap `tap` for every output position (-1 where it falls outside). */
export function tapOffsets(
  g: WindowGeometry,
  tap: readonly number[],
  inStrides: readonly number[],
  out: Int32Array,
): boolean {
  const rank = g.outShape.length;
  const index = new Array<number>(rank).fill(0);
  let anyValid = false;
  for (let o = 0; o < out.length; o++) {
    const offset = tapInputOffset(g, index, tap, inStrides);
    out[o] = offset;
    if (offset >= 0) anyValid = true;
    nextIndex(index, g.outShape);
  }
  return anyValid;
}

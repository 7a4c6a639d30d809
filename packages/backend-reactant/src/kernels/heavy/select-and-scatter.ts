/**
 * stablehlo.select_and_scatter: for each source element (row-major), the select region picks
 * one operand element in its window (the first real element, replaced whenever select(current,
 * candidate) is false), then the scatter region folds the source value into the result there.
 * Padding is never selectable. The result starts as init_value everywhere.
 *
 * Selection runs a window tap at a time over all source positions with one batched select
 * call per tap; the scatter step uses the fast reducer when there is one, else batched rounds
 * that keep source order for positions chosen by several windows.
 */
import { type NDArray, type RegionInfo, alloc, elementCount, strides } from "../../array.ts";
import { invalid } from "./errors.ts";
import { rawCombiner } from "./fast-reducer.ts";
import { filledWith } from "./reduce-window.ts";
import { copier } from "./reduce-window-batched.ts";
import { applyInRounds } from "./scatter-rounds.ts";
import { nextIndex, tapOffsets, windowGeometry } from "./window-geometry.ts";

export interface SelectAndScatterAttributes {
  readonly windowDimensions: readonly number[];
  readonly windowStrides?: readonly number[];
  readonly padding?: readonly (readonly [number, number])[];
}

const OP = "select_and_scatter";

/** selectAndScatter(operand, source, initValue, attrs, select, scatter): NDArray shaped like operand. */
export function selectAndScatter(
  operand: NDArray,
  source: NDArray,
  initValue: NDArray,
  attrs: SelectAndScatterAttributes,
  select: RegionInfo,
  scatter: RegionInfo,
): NDArray {
  if (elementCount(initValue.shape) !== 1) throw invalid(OP, "init_value must be a scalar");
  const g = windowGeometry(OP, operand.shape, attrs);
  if (g.outShape.join() !== source.shape.join())
    throw invalid(OP, `source shape [${source.shape}] does not match the window output shape [${g.outShape}]`);
  const result = filledWith(initValue, operand.shape);
  const count = elementCount(source.shape);
  if (count === 0) return result;

  // Selection: chosen[o] is the operand offset picked for source element o (-1: none yet).
  const chosen = new Int32Array(count).fill(-1);
  const chosenValues = alloc(operand.type, [count]);
  const keep = copier(operand, chosenValues);
  const offsets = new Int32Array(count);
  const inStrides = strides(operand.shape);
  const tap = new Array<number>(g.window.length).fill(0);
  const taps = g.window.reduce((p, w) => p * w, 1);
  for (let t = 0; t < taps; t++, nextIndex(tap, g.window)) {
    if (!tapOffsets(g, tap, inStrides, offsets)) continue;
    let contested = false;
    for (let o = 0; o < count; o++) if ((offsets[o] as number) >= 0 && (chosen[o] as number) >= 0) contested = true;
    let keepCurrent: NDArray | null = null;
    if (contested) {
      const candidates = alloc(operand.type, [count]);
      const take = copier(operand, candidates);
      for (let o = 0; o < count; o++) if ((offsets[o] as number) >= 0) take(offsets[o] as number, o);
      keepCurrent = select.batched([chosenValues, candidates])[0] as NDArray;
    }
    const single = keepCurrent !== null && elementCount(keepCurrent.shape) === 1;
    for (let o = 0; o < count; o++) {
      const offset = offsets[o] as number;
      if (offset < 0) continue;
      const stays = (chosen[o] as number) >= 0 && Number((keepCurrent as NDArray).data[single ? 0 : o]) !== 0;
      if (stays) continue;
      chosen[o] = offset;
      keep(offset, o);
    }
  }

  // Scatter: fold each source value into its chosen position, in source order.
  const fast = rawCombiner(scatter.reducer, result.type);
  const targets: number[] = [];
  const sources: number[] = [];
  for (let o = 0; o < count; o++) {
    const at = chosen[o] as number;
    if (at < 0) continue;
    if (fast) fast(result.data, at, source.data, o);
    else {
      targets.push(at);
      sources.push(o);
    }
  }
  if (targets.length > 0) applyInRounds([result], [source], scatter, targets, sources);
  return result;
}

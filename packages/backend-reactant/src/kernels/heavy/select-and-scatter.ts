/**
 * stablehlo.select_and_scatter: for each source element (row-major), the select region picks
 * one operand element in its window (the first real element, replaced whenever select(current,
 * candidate) is false), then the scatter region folds the source value into the result there.
 * Padding is never selectable. The result starts as init_value everywhere.
 */
import { type NDArray, type RegionInfo, type Scalar, elementCount, strides } from "../../array.ts";
import { scalarReader, scalarWriter } from "./element-io.ts";
import { invalid } from "./errors.ts";
import { rawCombiner } from "./fast-reducer.ts";
import { filledWith } from "./reduce-window.ts";
import { forEachTap, nextIndex, windowGeometry } from "./window-geometry.ts";

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
  if (elementCount(source.shape) === 0) return result;
  const readOperand = scalarReader(operand);
  const fast = rawCombiner(scatter.reducer, result.type);
  const readResult = scalarReader(result);
  const readSource = scalarReader(source);
  const writeResult = scalarWriter(result);
  const inStrides = strides(operand.shape);
  const index = new Array<number>(g.outShape.length).fill(0);
  const tap = new Array<number>(g.outShape.length).fill(0);
  let linear = 0;
  do {
    let chosen = -1;
    let chosenValue: Scalar = 0;
    forEachTap(g, index, inStrides, tap, (offset) => {
      const candidate = readOperand(offset);
      if (chosen < 0 || Number(select.fn([chosenValue, candidate])[0]) === 0) {
        chosen = offset;
        chosenValue = candidate;
      }
    });
    if (chosen >= 0) {
      if (fast) fast(result.data, chosen, source.data, linear);
      else writeResult(chosen, scatter.fn([readResult(chosen), readSource(linear)])[0] as Scalar);
    }
    linear++;
  } while (nextIndex(index, g.outShape));
  return result;
}

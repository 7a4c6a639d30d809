/**
 * Gather and scatter written straight from the spec's per-element formulas (result index ->
 * operand index, update index -> result index): the oracles for the random tests.
 */
import type { NDArray } from "../../src/array.ts";
import type { GatherDimensionNumbers, ScatterDimensionNumbers } from "../../src/kernels/heavy/index.ts";
import { forEachIndex, offsetOf } from "./helpers.ts";

function indexVector(indices: NDArray, batchIndex: readonly number[], ivd: number, length: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < length; c++) {
    const full =
      ivd < indices.shape.length ? [...batchIndex.slice(0, ivd), c, ...batchIndex.slice(ivd)] : [...batchIndex];
    out.push(Number(indices.data[offsetOf(indices.shape, full)]));
  }
  return out;
}

/** Inserts zeros at `positions` (sorted) into `values`. */
function withZerosAt(values: readonly number[], positions: readonly number[], rank: number): number[] {
  const out: number[] = [];
  let v = 0;
  for (let d = 0; d < rank; d++) out.push(positions.includes(d) ? 0 : (values[v++] as number));
  return out;
}

export function naiveGather(
  operand: NDArray,
  indices: NDArray,
  dims: GatherDimensionNumbers,
  sliceSizes: number[],
  resultShape: number[],
): number[] {
  const out: number[] = [];
  const rank = operand.shape.length;
  const batchDims = [...resultShape.keys()].filter((a) => !dims.offsetDims.includes(a));
  forEachIndex(resultShape, (ri) => {
    const batchIndex = batchDims.map((a) => ri[a] as number);
    const start = indexVector(indices, batchIndex, dims.indexVectorDim, dims.startIndexMap.length);
    const fullStart = new Array<number>(rank).fill(0);
    dims.startIndexMap.forEach((d, c) => {
      fullStart[d] = Math.min(
        Math.max(start[c] as number, 0),
        (operand.shape[d] as number) - (sliceSizes[d] as number),
      );
    });
    const fullBatching = new Array<number>(rank).fill(0);
    dims.operandBatchingDims.forEach((d, i) => {
      const s = dims.startIndicesBatchingDims[i] as number;
      fullBatching[d] = batchIndex[s < dims.indexVectorDim ? s : s - 1] as number;
    });
    const offset = dims.offsetDims.map((a) => ri[a] as number);
    const fullOffset = withZerosAt(offset, [...dims.collapsedSliceDims, ...dims.operandBatchingDims], rank);
    const operandIndex = fullStart.map((s, d) => s + (fullBatching[d] as number) + (fullOffset[d] as number));
    out.push(Number(operand.data[offsetOf(operand.shape, operandIndex)]));
  });
  return out;
}

/** Integer add scatter (order-free), skipping any update whose window does not fit. */
export function naiveScatterAdd(
  input: NDArray,
  indices: NDArray,
  updates: NDArray,
  dims: ScatterDimensionNumbers,
): number[] {
  const out = Array.from(input.data as ArrayLike<number>, Number);
  const rank = input.shape.length;
  const windowAxes = [...Array(rank).keys()].filter(
    (d) => !dims.insertedWindowDims.includes(d) && !dims.inputBatchingDims.includes(d),
  );
  const scatterDims = [...updates.shape.keys()].filter((a) => !dims.updateWindowDims.includes(a));
  forEachIndex(updates.shape, (ui) => {
    const scatterIndex = scatterDims.map((a) => ui[a] as number);
    const start = indexVector(indices, scatterIndex, dims.indexVectorDim, dims.scatterDimsToOperandDims.length);
    const fullStart = new Array<number>(rank).fill(0);
    dims.scatterDimsToOperandDims.forEach((d, c) => {
      fullStart[d] = start[c] as number;
    });
    dims.inputBatchingDims.forEach((d, i) => {
      const s = dims.scatterIndicesBatchingDims[i] as number;
      fullStart[d] = (fullStart[d] as number) + (scatterIndex[s < dims.indexVectorDim ? s : s - 1] as number);
    });
    for (let d = 0; d < rank; d++) {
      const j = windowAxes.indexOf(d);
      const size = j >= 0 ? (updates.shape[dims.updateWindowDims[j] as number] as number) : 1;
      if ((fullStart[d] as number) < 0 || (fullStart[d] as number) + size > (input.shape[d] as number)) return;
    }
    const window = dims.updateWindowDims.map((a) => ui[a] as number);
    const fullWindow = withZerosAt(window, [...dims.insertedWindowDims, ...dims.inputBatchingDims], rank);
    const target = offsetOf(
      input.shape,
      fullStart.map((s, d) => s + (fullWindow[d] as number)),
    );
    out[target] = (out[target] as number) + Number(updates.data[offsetOf(updates.shape, ui)]);
  });
  return out;
}

/**
 * stablehlo.scatter in its general form: several inputs / updates, inserted window and
 * batching dimensions, any index_vector_dim. Updates are applied in row-major order of the
 * scatter indices (so duplicates combine deterministically, later ones last), and an update
 * window that does not fit entirely inside the operand is skipped, as XLA does.
 */
import {
  type DataAlloc,
  type NDArray,
  type RegionInfo,
  type Scalar,
  type TypedArray,
  sameShape,
  slotsPerElement,
  strides,
} from "../../array.ts";
import { type ScalarReader, type ScalarWriter, copyData, scalarReader, scalarWriter, toFloat64 } from "./element-io.ts";
import { checkAxes, invalid } from "./errors.ts";
import { rawCombiner } from "./fast-reducer.ts";
import { addBatchingOffsets, checkIndexedWindows, forEachIndexBatch } from "./index-batches.ts";
import { areTrailingAxes, isContiguousWindow, plainIndices, vectorsAreRows } from "./index-rows.ts";
import { applyInRounds } from "./scatter-rounds.ts";
import { type RowUpdate, type UpdateKind, rowUpdater } from "./scatter-rows.ts";

export interface ScatterDimensionNumbers {
  readonly updateWindowDims: readonly number[];
  readonly insertedWindowDims: readonly number[];
  readonly inputBatchingDims: readonly number[];
  readonly scatterIndicesBatchingDims: readonly number[];
  readonly scatterDimsToOperandDims: readonly number[];
  readonly indexVectorDim: number;
}

const OP = "scatter";
/** Below this many updates, per-element region calls are cheaper than batched rounds. */
const BATCHED_MIN_PAIRS = 8;

function checkScatter(
  inputs: readonly NDArray[],
  indices: NDArray,
  updates: readonly NDArray[],
  dims: ScatterDimensionNumbers,
) {
  if (inputs.length === 0 || inputs.length !== updates.length)
    throw invalid(OP, `needs as many updates as inputs (got ${inputs.length} inputs, ${updates.length} updates)`);
  const first = inputs[0] as NDArray;
  const rank = first.shape.length;
  for (const input of inputs) {
    if (input.shape.join() !== first.shape.join()) throw invalid(OP, "all inputs must have the same shape");
  }
  const updateShape = (updates[0] as NDArray).shape;
  for (const u of updates)
    if (u.shape.join() !== updateShape.join()) throw invalid(OP, "all updates must have the same shape");
  checkAxes(
    OP,
    "inserted_window_dims + input_batching_dims",
    [...dims.insertedWindowDims, ...dims.inputBatchingDims],
    rank,
  );
  checkAxes(OP, "scatter_dims_to_operand_dims", dims.scatterDimsToOperandDims, rank);
  checkAxes(OP, "update_window_dims", dims.updateWindowDims, updateShape.length);
  const { batches, windowAxes } = checkIndexedWindows(OP, rank, indices.shape, {
    indexVectorDim: dims.indexVectorDim,
    indexMap: dims.scatterDimsToOperandDims,
    operandBatchingDims: dims.inputBatchingDims,
    indicesBatchingDims: dims.scatterIndicesBatchingDims,
    droppedDims: dims.insertedWindowDims,
    names: {
      indexMap: "scatter_dims_to_operand_dims",
      operandBatchingDims: "input_batching_dims",
      indicesBatchingDims: "scatter_indices_batching_dims",
    },
  });
  if (windowAxes.length !== dims.updateWindowDims.length)
    throw invalid(OP, `update_window_dims has ${dims.updateWindowDims.length} entries, expected ${windowAxes.length}`);
  const scatterAxes = [...Array(updateShape.length).keys()].filter((a) => !dims.updateWindowDims.includes(a));
  const scatterShape = scatterAxes.map((a) => updateShape[a]);
  if (scatterShape.join() !== batches.batchShape.join())
    throw invalid(
      OP,
      `update scatter dimensions [${scatterShape}] do not match the index batch shape [${batches.batchShape}]`,
    );
  const windowShape = dims.updateWindowDims.map((a) => updateShape[a] as number);
  windowShape.forEach((size, j) => {
    if (size > (first.shape[windowAxes[j] as number] as number))
      throw invalid(
        OP,
        `update window size ${size} exceeds operand axis ${windowAxes[j]} of size ${first.shape[windowAxes[j] as number]}`,
      );
  });
  return { windowAxes, scatterAxes, windowShape, batches };
}

type ScatterShape = ReturnType<typeof checkScatter>;

/**
 * checkScatter's answer for one op, kept while its one input, indices and update keep their
 * shapes (a program's op sees the same ones on every run).
 */
const checked = new WeakMap<
  ScatterDimensionNumbers,
  { input: number[]; indices: number[]; update: number[]; result: ScatterShape }
>();

function checkedScatter(
  inputs: readonly NDArray[],
  indices: NDArray,
  updates: readonly NDArray[],
  dims: ScatterDimensionNumbers,
): ScatterShape {
  if (inputs.length !== 1 || updates.length !== 1) return checkScatter(inputs, indices, updates, dims);
  const input = (inputs[0] as NDArray).shape;
  const update = (updates[0] as NDArray).shape;
  const last = checked.get(dims);
  if (last && sameShape(last.input, input) && sameShape(last.indices, indices.shape) && sameShape(last.update, update))
    return last.result;
  const result = checkScatter(inputs, indices, updates, dims);
  checked.set(dims, { input: [...input], indices: [...indices.shape], update: [...update], result });
  return result;
}

export interface ScatterOptions {
  /** Hints from the program; results do not depend on them. */
  readonly indicesAreSorted?: boolean;
  readonly uniqueIndices?: boolean;
  /** The update region's kind where it is a plain combine or a replace (scatter-rows.ts). */
  readonly updateKind?: UpdateKind;
  /** The one input's storage may become the result (dead after the op and solely owned). */
  readonly reuseInput?: boolean;
  /** Storage for the results (the plan's pool), which start as copies of the inputs. */
  readonly take?: DataAlloc;
}

/**
 * scatter(inputs, scatterIndices, updates, dims, region): one result per input. The region
 * gets (current values..., update values...) and returns the new values.
 */
export function scatter(
  inputs: readonly NDArray[],
  scatterIndices: NDArray,
  updates: readonly NDArray[],
  dims: ScatterDimensionNumbers,
  region: RegionInfo,
  options: ScatterOptions = {},
): NDArray[] {
  const { windowAxes, scatterAxes, windowShape, batches } = checkedScatter(inputs, scatterIndices, updates, dims);
  const first = inputs[0] as NDArray;
  const single = inputs.length === 1;
  const take = options.take;
  const copy = (input: NDArray): TypedArray => {
    if (!take) return copyData(input);
    const data = take(input.type, input.data.length / slotsPerElement(input.type));
    (data as Float64Array).set(input.data as Float64Array);
    return data;
  };
  const results: NDArray[] = inputs.map((input) => ({
    type: input.type,
    shape: [...input.shape],
    data: single && options.reuseInput === true ? input.data : copy(input),
  }));
  const operandShape = first.shape;
  const operandStrides = strides(operandShape);
  const updateStrides = strides((updates[0] as NDArray).shape);
  const windowIn = windowAxes.map((d) => operandStrides[d] as number);
  const windowUpdate = dims.updateWindowDims.map((a) => updateStrides[a] as number);
  const windowCount = windowShape.reduce((p, s) => p * s, 1);
  if (windowCount === 0) return results;

  const rank = operandShape.length;
  const rowUpdate = single ? rowUpdater(options.updateKind ?? region.reducer, first.type) : null;
  const plain = plainIndices(scatterIndices.data);
  if (
    rowUpdate !== null &&
    plain !== null &&
    dims.inputBatchingDims.length === 0 &&
    vectorsAreRows(scatterIndices.shape.length, dims.indexVectorDim) &&
    areTrailingAxes(dims.updateWindowDims, (updates[0] as NDArray).shape.length) &&
    isContiguousWindow(windowShape, windowIn, 1)
  ) {
    const extent = operandShape.map((_, d) => {
      const j = windowAxes.indexOf(d);
      return j >= 0 ? (windowShape[j] as number) : 1;
    });
    const data = (results[0] as NDArray).data;
    scatterRuns(
      data,
      (updates[0] as NDArray).data,
      plain,
      batches.count,
      windowCount,
      operandShape,
      operandStrides,
      extent,
      dims,
      rowUpdate,
    );
    return results;
  }
  const indices = toFloat64(scatterIndices, OP);
  const lastWindow = windowShape.length - 1;
  // Where the window's innermost axis is contiguous in both the operand and the update, a
  // recognised region runs as one loop per run of it.
  const contiguous =
    lastWindow >= 0 &&
    windowAxes[lastWindow] === rank - 1 &&
    windowUpdate[lastWindow] === 1 &&
    windowIn[lastWindow] === 1;
  const runLength = rowUpdate && contiguous ? (windowShape[lastWindow] as number) : 1;
  const counted = runLength > 1 ? lastWindow : windowShape.length;
  const fast = single && !rowUpdate ? rawCombiner(region.reducer, first.type) : null;
  // General regions only record the pairs here; they are applied below in batched rounds.
  const targets: number[] = [];
  const sources: number[] = [];
  const resultData = (results[0] as NDArray).data;
  const updateData = (updates[0] as NDArray).data;
  const apply = rowUpdate
    ? (target: number, source: number) => rowUpdate(resultData, target, updateData, source, runLength)
    : fast
      ? (target: number, source: number) => fast(resultData, target, updateData, source)
      : (target: number, source: number) => {
          targets.push(target);
          sources.push(source);
        };
  const runs = windowCount / runLength;
  // Each operand axis's window extent (1 where the window does not span it).
  const extent = operandShape.map((_, d) => {
    const j = windowAxes.indexOf(d);
    return j >= 0 ? (windowShape[j] as number) : 1;
  });

  const start = new Array<number>(operandShape.length);
  const counter = new Array<number>(windowShape.length);
  forEachIndexBatch(scatterIndices.shape, dims.indexVectorDim, (batchIndex, vectorOffset) => {
    start.fill(0);
    dims.scatterDimsToOperandDims.forEach((d, c) => {
      start[d] = indices[vectorOffset + c * batches.vectorStride] as number;
    });
    addBatchingOffsets(start, batchIndex, dims.inputBatchingDims, dims.scatterIndicesBatchingDims, dims.indexVectorDim);
    // The whole window must fit; XLA drops the update otherwise.
    for (let d = 0; d < rank; d++) {
      const s = start[d] as number;
      if (!(s >= 0 && s + (extent[d] as number) <= (operandShape[d] as number))) return;
    }
    let target = 0;
    for (let d = 0; d < operandShape.length; d++) target += (start[d] as number) * (operandStrides[d] as number);
    let source = 0;
    scatterAxes.forEach((axis, j) => {
      source += (batchIndex[j] as number) * (updateStrides[axis] as number);
    });
    counter.fill(0);
    for (let e = 0; e < runs; e++) {
      apply(target, source);
      for (let a = counted - 1; a >= 0; a--) {
        counter[a] = (counter[a] as number) + 1;
        target += windowIn[a] as number;
        source += windowUpdate[a] as number;
        if ((counter[a] as number) < (windowShape[a] as number)) break;
        target -= (windowIn[a] as number) * (windowShape[a] as number);
        source -= (windowUpdate[a] as number) * (windowShape[a] as number);
        counter[a] = 0;
      }
    }
  });
  if (targets.length >= BATCHED_MIN_PAIRS) applyInRounds(results, updates, region, targets, sources);
  else {
    const step = regionApplier(results, updates, region);
    for (let i = 0; i < targets.length; i++) step(targets[i] as number, sources[i] as number);
  }
  return results;
}

/**
 * The layout of index-rows.ts: index vector k names where the k-th window-sized run of the
 * updates goes, one contiguous run of the result; a window that does not fit is skipped.
 */
function scatterRuns(
  result: TypedArray,
  updates: TypedArray,
  indices: ArrayLike<number>,
  count: number,
  run: number,
  operandShape: readonly number[],
  operandStrides: readonly number[],
  extent: readonly number[],
  dims: ScatterDimensionNumbers,
  rowUpdate: RowUpdate,
): void {
  const map = dims.scatterDimsToOperandDims;
  const length = map.length;
  const steps = map.map((d) => operandStrides[d] as number);
  const limits = map.map((d) => (operandShape[d] as number) - (extent[d] as number));
  next: for (let k = 0, v = 0, source = 0; k < count; k++, v += length, source += run) {
    let target = 0;
    for (let c = 0; c < length; c++) {
      const at = indices[v + c] as number;
      if (!(at >= 0 && at <= (limits[c] as number))) continue next;
      target += at * (steps[c] as number);
    }
    rowUpdate(result, target, updates, source, run);
  }
}

/** The slow, general step: call the region with every result's current value and every update. */
function regionApplier(
  results: NDArray[],
  updates: readonly NDArray[],
  region: RegionInfo,
): (target: number, source: number) => void {
  const readResult: ScalarReader[] = results.map(scalarReader);
  const writeResult: ScalarWriter[] = results.map(scalarWriter);
  const readUpdate: ScalarReader[] = updates.map(scalarReader);
  const n = results.length;
  return (target, source) => {
    const args = new Array<Scalar>(2 * n);
    for (let k = 0; k < n; k++) {
      args[k] = (readResult[k] as ScalarReader)(target);
      args[n + k] = (readUpdate[k] as ScalarReader)(source);
    }
    const out = region.fn(args);
    for (let k = 0; k < n; k++) (writeResult[k] as ScalarWriter)(target, out[k] as Scalar);
  };
}

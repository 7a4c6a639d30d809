/**
 * stablehlo.gather in its general form (collapsed, offset and batching dimensions, any
 * index_vector_dim). Start indices are clamped so the whole slice fits, as the spec says.
 * Each batch position copies one slice; the copy works on raw storage, so every element type
 * (complex and f8 too) is supported.
 */
import {
  type DataAlloc,
  type NDArray,
  type TypedArray,
  alloc,
  elementCount,
  sameShape,
  slotsPerElement,
  strides,
} from "../../array.ts";
import { toFloat64 } from "./element-io.ts";
import { bitExact } from "./permute.ts";
import { checkAxes, invalid } from "./errors.ts";
import { addBatchingOffsets, checkIndexedWindows, forEachIndexBatch } from "./index-batches.ts";
import { areTrailingAxes, isContiguousWindow, plainIndices, vectorsAreRows } from "./index-rows.ts";

export interface GatherDimensionNumbers {
  readonly offsetDims: readonly number[];
  readonly collapsedSliceDims: readonly number[];
  readonly operandBatchingDims: readonly number[];
  readonly startIndicesBatchingDims: readonly number[];
  readonly startIndexMap: readonly number[];
  readonly indexVectorDim: number;
}

const OP = "gather";

type GatherShape = ReturnType<typeof checkGather>;

/**
 * The checks and axis bookkeeping of one op's gather, kept while its operand and index shapes
 * stay the same (a program's op sees the same ones on every run; a small gather's time was
 * mostly these).
 */
const checked = new WeakMap<
  GatherDimensionNumbers,
  { operand: number[]; indices: number[]; sizes: readonly number[]; result: GatherShape }
>();

function gatherShape(
  operand: NDArray,
  indices: NDArray,
  dims: GatherDimensionNumbers,
  sliceSizes: readonly number[],
): GatherShape {
  const last = checked.get(dims);
  if (
    last &&
    last.sizes === sliceSizes &&
    sameShape(last.operand, operand.shape) &&
    sameShape(last.indices, indices.shape)
  )
    return last.result;
  const result = checkGather(operand, indices, dims, sliceSizes);
  checked.set(dims, { operand: [...operand.shape], indices: [...indices.shape], sizes: sliceSizes, result });
  return result;
}

function checkGather(operand: NDArray, indices: NDArray, dims: GatherDimensionNumbers, sliceSizes: readonly number[]) {
  const rank = operand.shape.length;
  if (sliceSizes.length !== rank)
    throw invalid(OP, `slice_sizes has ${sliceSizes.length} entries for an operand of rank ${rank}`);
  sliceSizes.forEach((size, d) => {
    if (size < 0 || size > (operand.shape[d] as number))
      throw invalid(OP, `slice size ${size} on axis ${d} exceeds operand size ${operand.shape[d]}`);
  });
  checkAxes(
    OP,
    "collapsed_slice_dims + operand_batching_dims",
    [...dims.collapsedSliceDims, ...dims.operandBatchingDims],
    rank,
  );
  checkAxes(OP, "start_index_map", dims.startIndexMap, rank);
  for (const d of [...dims.collapsedSliceDims, ...dims.operandBatchingDims]) {
    if (sliceSizes[d] !== 1)
      throw invalid(OP, `collapsed or batching axis ${d} must have slice size 1, got ${sliceSizes[d]}`);
  }
  const { batches, windowAxes } = checkIndexedWindows(OP, rank, indices.shape, {
    indexVectorDim: dims.indexVectorDim,
    indexMap: dims.startIndexMap,
    operandBatchingDims: dims.operandBatchingDims,
    indicesBatchingDims: dims.startIndicesBatchingDims,
    droppedDims: dims.collapsedSliceDims,
    names: {
      indexMap: "start_index_map",
      operandBatchingDims: "operand_batching_dims",
      indicesBatchingDims: "start_indices_batching_dims",
    },
  });
  const resultRank = batches.batchShape.length + windowAxes.length;
  if (dims.offsetDims.length !== windowAxes.length)
    throw invalid(OP, `offset_dims has ${dims.offsetDims.length} entries, expected ${windowAxes.length}`);
  checkAxes(OP, "offset_dims", dims.offsetDims, resultRank);
  const shape = new Array<number>(resultRank);
  dims.offsetDims.forEach((axis, j) => {
    shape[axis] = sliceSizes[windowAxes[j] as number] as number;
  });
  const batchAxes = [...Array(resultRank).keys()].filter((a) => !dims.offsetDims.includes(a));
  batchAxes.forEach((axis, j) => {
    shape[axis] = batches.batchShape[j] as number;
  });
  return { shape, windowAxes, batchAxes, batches };
}

/** gather(operand, startIndices, dims, sliceSizes): NDArray. */
export function gather(
  operand: NDArray,
  startIndices: NDArray,
  dims: GatherDimensionNumbers,
  sliceSizes: readonly number[],
  take?: DataAlloc,
): NDArray {
  const { shape, windowAxes, batchAxes, batches } = gatherShape(operand, startIndices, dims, sliceSizes);
  // Every element of the result is written: pooled storage (`take`) needs no zeroing.
  const result: NDArray = take
    ? { type: operand.type, shape: [...shape], data: take(operand.type, elementCount(shape)) }
    : alloc(operand.type, [...shape]);
  if (result.data.length === 0) return result;
  const moved = bitExact(operand.data, slotsPerElement(operand.type));
  const slots = moved.slots;
  const operandStrides = strides(operand.shape);
  const resultStrides = strides(shape);
  const start = new Array<number>(operand.shape.length);
  // The slice's own shape and the strides it moves with in operand and result.
  const windowShape = windowAxes.map((d) => sliceSizes[d] as number);
  const windowIn = windowAxes.map((d) => (operandStrides[d] as number) * slots);
  const windowOut = dims.offsetDims.map((a) => (resultStrides[a] as number) * slots);
  const plain = plainIndices(startIndices.data);
  if (
    plain !== null &&
    dims.operandBatchingDims.length === 0 &&
    vectorsAreRows(startIndices.shape.length, dims.indexVectorDim) &&
    areTrailingAxes(dims.offsetDims, shape.length) &&
    isContiguousWindow(windowShape, windowIn, slots)
  ) {
    const run = windowShape.reduce((p, n) => p * n, slots);
    const to = bitExact(result.data, 1).view;
    gatherRuns(moved.view, to, plain, batches.count, run, operand.shape, operandStrides, dims, sliceSizes, slots);
    return result;
  }
  const indices = toFloat64(startIndices, OP);
  const src = moved.view as unknown as { [i: number]: unknown };
  const dst = bitExact(result.data, 1).view as unknown as { [i: number]: unknown };
  const counter = new Array<number>(windowShape.length).fill(0);

  forEachIndexBatch(startIndices.shape, dims.indexVectorDim, (batchIndex, vectorOffset) => {
    start.fill(0);
    dims.startIndexMap.forEach((d, c) => {
      const raw = indices[vectorOffset + c * batches.vectorStride] as number;
      const max = (operand.shape[d] as number) - (sliceSizes[d] as number);
      start[d] = Math.min(Math.max(raw, 0), max);
    });
    addBatchingOffsets(start, batchIndex, dims.operandBatchingDims, dims.startIndicesBatchingDims, dims.indexVectorDim);
    let from = 0;
    for (let d = 0; d < start.length; d++) from += (start[d] as number) * (operandStrides[d] as number) * slots;
    let to = 0;
    batchAxes.forEach((axis, j) => {
      to += (batchIndex[j] as number) * (resultStrides[axis] as number) * slots;
    });
    copyWindow(src, from, dst, to, windowShape, windowIn, windowOut, slots, counter);
  });
  return result;
}

/**
 * The layout of index-rows.ts: index vector k (clamped so the slice fits) picks one contiguous
 * run of the operand, copied to the k-th run of the result.
 */
function gatherRuns(
  src: TypedArray,
  dst: TypedArray,
  indices: ArrayLike<number>,
  count: number,
  run: number,
  operandShape: readonly number[],
  operandStrides: readonly number[],
  dims: GatherDimensionNumbers,
  sliceSizes: readonly number[],
  slots: number,
): void {
  const map = dims.startIndexMap;
  const length = map.length;
  const steps = map.map((d) => (operandStrides[d] as number) * slots);
  const limits = map.map((d) => (operandShape[d] as number) - (sliceSizes[d] as number));
  const from = src as Int32Array;
  const to = dst as Int32Array;
  for (let k = 0, v = 0, at = 0; k < count; k++, v += length, at += run) {
    let start = 0;
    for (let c = 0; c < length; c++) {
      const raw = indices[v + c] as number;
      const limit = limits[c] as number;
      start += Math.min(Math.max(raw, 0), limit) * (steps[c] as number);
    }
    if (run >= 64) to.set(from.subarray(start, start + run), at);
    else for (let q = 0; q < run; q++) to[at + q] = from[start + q] as number;
  }
}

/**
 * Copies an N-d block between two strided layouts: the innermost axis in one loop (a single
 * run of words when it is contiguous on both sides, as an embedding row is), the outer axes by
 * an odometer.
 */
export function copyWindow(
  src: { [i: number]: unknown },
  from: number,
  dst: { [i: number]: unknown },
  to: number,
  shape: readonly number[],
  stepIn: readonly number[],
  stepOut: readonly number[],
  slots: number,
  counter: number[],
): void {
  const rank = shape.length;
  for (const size of shape) if (size === 0) return;
  if (rank === 0) {
    for (let q = 0; q < slots; q++) dst[to + q] = src[from + q];
    return;
  }
  const last = rank - 1;
  const inner = shape[last] as number;
  const innerIn = stepIn[last] as number;
  const innerOut = stepOut[last] as number;
  const run = innerIn === slots && innerOut === slots ? inner * slots : 0;
  counter.fill(0);
  for (;;) {
    if (run > 0) for (let q = 0; q < run; q++) dst[to + q] = src[from + q];
    else {
      for (let i = 0, f = from, t = to; i < inner; i++, f += innerIn, t += innerOut) {
        for (let q = 0; q < slots; q++) dst[t + q] = src[f + q];
      }
    }
    let a = last - 1;
    for (; a >= 0; a--) {
      counter[a] = (counter[a] as number) + 1;
      from += stepIn[a] as number;
      to += stepOut[a] as number;
      if ((counter[a] as number) < (shape[a] as number)) break;
      from -= (stepIn[a] as number) * (shape[a] as number);
      to -= (stepOut[a] as number) * (shape[a] as number);
      counter[a] = 0;
    }
    if (a < 0) return;
  }
}

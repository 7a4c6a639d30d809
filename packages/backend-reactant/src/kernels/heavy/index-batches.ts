/**
 * Walks the "batch" positions of a gather / scatter index array: every position of the array
 * with index_vector_dim left out, in row-major order, giving the multi-index and where its
 * index vector starts. index_vector_dim == rank means each element is a one-number vector.
 * Also the index checks and batching-dimension arithmetic that gather and scatter share.
 */
import { strides } from "../../array.ts";
import { invalid } from "./errors.ts";

export interface IndexBatches {
  readonly batchShape: number[];
  readonly vectorLength: number;
  /** Distance between consecutive components of one index vector. */
  readonly vectorStride: number;
  readonly count: number;
}

export function indexBatches(indicesShape: readonly number[], indexVectorDim: number): IndexBatches {
  const rank = indicesShape.length;
  const batchShape = indicesShape.filter((_, axis) => axis !== indexVectorDim);
  const vectorLength = indexVectorDim < rank ? (indicesShape[indexVectorDim] as number) : 1;
  const vectorStride = indexVectorDim < rank ? (strides(indicesShape)[indexVectorDim] as number) : 1;
  return { batchShape, vectorLength, vectorStride, count: batchShape.reduce((p, d) => p * d, 1) };
}

/**
 * Calls visit(batchIndex, vectorOffset) for each batch position in row-major order. The
 * batchIndex array is reused between calls.
 */
export function forEachIndexBatch(
  indicesShape: readonly number[],
  indexVectorDim: number,
  visit: (batchIndex: readonly number[], vectorOffset: number, linear: number) => void,
): void {
  const { batchShape, count } = indexBatches(indicesShape, indexVectorDim);
  const all = strides(indicesShape);
  const batchStrides = all.filter((_, axis) => axis !== indexVectorDim);
  const index = new Array<number>(batchShape.length).fill(0);
  let offset = 0;
  for (let linear = 0; linear < count; linear++) {
    visit(index, offset, linear);
    for (let a = batchShape.length - 1; a >= 0; a--) {
      index[a] = (index[a] as number) + 1;
      offset += batchStrides[a] as number;
      if ((index[a] as number) < (batchShape[a] as number)) break;
      offset -= (batchStrides[a] as number) * (batchShape[a] as number);
      index[a] = 0;
    }
  }
}

/** Which batch-index component holds indices axis `axis` (index_vector_dim removed). */
export function batchComponent(axis: number, indexVectorDim: number): number {
  return axis < indexVectorDim ? axis : axis - 1;
}

/**
 * The attributes gather and scatter share under different names: the names come along so that
 * each op's messages keep its own spelling.
 */
export interface IndexedWindowDims {
  readonly indexVectorDim: number;
  /** start_index_map / scatter_dims_to_operand_dims. */
  readonly indexMap: readonly number[];
  readonly operandBatchingDims: readonly number[];
  readonly indicesBatchingDims: readonly number[];
  /** collapsed_slice_dims / inserted_window_dims: operand axes a window does not span. */
  readonly droppedDims: readonly number[];
  readonly names: {
    readonly indexMap: string;
    readonly operandBatchingDims: string;
    readonly indicesBatchingDims: string;
  };
}

/**
 * Checks the index operand against the attributes and returns its batch layout and the operand
 * axes one window spans (those neither dropped nor batching), in order.
 */
export function checkIndexedWindows(
  op: string,
  operandRank: number,
  indicesShape: readonly number[],
  dims: IndexedWindowDims,
): { batches: IndexBatches; windowAxes: number[] } {
  if (dims.indexVectorDim < 0 || dims.indexVectorDim > indicesShape.length)
    throw invalid(op, `index_vector_dim ${dims.indexVectorDim} is outside 0..${indicesShape.length}`);
  const batches = indexBatches(indicesShape, dims.indexVectorDim);
  if (batches.vectorLength !== dims.indexMap.length)
    throw invalid(
      op,
      `index vectors have ${batches.vectorLength} components but ${dims.names.indexMap} has ${dims.indexMap.length}`,
    );
  if (dims.operandBatchingDims.length !== dims.indicesBatchingDims.length)
    throw invalid(op, `${dims.names.operandBatchingDims} and ${dims.names.indicesBatchingDims} differ in length`);
  const windowAxes = [...Array(operandRank).keys()].filter(
    (d) => !dims.droppedDims.includes(d) && !dims.operandBatchingDims.includes(d),
  );
  return { batches, windowAxes };
}

/**
 * Adds each batching dimension's batch position to the window start: a batching axis of the
 * operand is indexed by the matching axis of the index array, not by an index vector.
 */
export function addBatchingOffsets(
  start: number[],
  batchIndex: readonly number[],
  operandBatchingDims: readonly number[],
  indicesBatchingDims: readonly number[],
  indexVectorDim: number,
): void {
  operandBatchingDims.forEach((d, i) => {
    start[d] =
      (start[d] as number) + (batchIndex[batchComponent(indicesBatchingDims[i] as number, indexVectorDim)] as number);
  });
}

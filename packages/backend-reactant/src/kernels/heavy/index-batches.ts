/**
 * Walks the "batch" positions of a gather / scatter index array: every position of the array
 * with index_vector_dim left out, in row-major order, giving the multi-index and where its
 * index vector starts. index_vector_dim == rank means each element is a one-number vector.
 */
import { strides } from "../../array.ts";

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

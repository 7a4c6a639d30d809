/**
 * One row-major GEMM request: C[m x n] (+)= op(A)[m x k] * op(B)[k x n]. Offsets and leading
 * dimensions are in elements, so callers can address sub-matrices (one batch, one group)
 * without copying.
 */
export interface GemmCall {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly a: Float32Array | Float64Array;
  readonly aOffset: number;
  readonly lda: number;
  /** A is stored k x m (op(A) = A^T). */
  readonly transA: boolean;
  readonly b: Float32Array | Float64Array;
  readonly bOffset: number;
  readonly ldb: number;
  /** B is stored n x k. */
  readonly transB: boolean;
  readonly c: Float32Array | Float64Array;
  readonly cOffset: number;
  readonly ldc: number;
  /** Add into C instead of overwriting it. */
  readonly accumulate: boolean;
}

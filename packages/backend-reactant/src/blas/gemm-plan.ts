/**
 * A GEMM for one call shape, decided when the shape is first seen (a dot_general op's plan):
 * products small enough for the loop (SMALL_GEMM_LIMIT, the same rule as `gemm`) get the
 * loop's arithmetic for exactly that shape, in WebAssembly SIMD where it runs (simd-gemm.ts),
 * else as JavaScript compiled for the shape; larger ones call OpenBLAS directly (the call
 * `gemm` would make, without rebuilding its request and checks each time), or go through
 * `gemm` where OpenBLAS is missing or set aside. Either way each call gives the bits `gemm`
 * gives for it.
 */
import type { GemmCall } from "./gemm-call.ts";
import { blasGemmFor, fallbackForced, gemm } from "./gemm.ts";
import { simdGemmKernel } from "./simd-gemm.ts";
import { type GemmShape, type SmallGemmKernel, compileSmallGemm } from "./small-gemm-codegen.ts";
import { SMALL_GEMM_LIMIT } from "./small-gemm.ts";

/**
 * C = op(A) op(B) for the planned shape; offsets in elements. `bVersion`: b's storage version
 * where the caller knows it (SmallGemmKernel), so a kernel may keep B's copy between calls.
 */
export type GemmRunner = (
  a: Float32Array | Float64Array,
  aOffset: number,
  b: Float32Array | Float64Array,
  bOffset: number,
  c: Float32Array | Float64Array,
  cOffset: number,
  bVersion?: number,
) => void;

export type { GemmShape } from "./small-gemm-codegen.ts";

export function planGemm(shape: GemmShape, f32: boolean): GemmRunner {
  const { m, n, k, lda, ldb, ldc, transA, transB } = shape;
  // Empty extents and strides shorter than a row are `gemm`'s to handle (or refuse) on every call.
  const plain = m > 0 && n > 0 && k > 0 && lda >= (transA ? m : k) && ldb >= (transB ? k : n) && ldc >= n;
  const small: SmallGemmKernel | null =
    plain && m * n * k <= SMALL_GEMM_LIMIT ? (simdGemmKernel(shape, f32) ?? compileSmallGemm(shape, f32)) : null;
  const direct = small ?? (plain ? blasGemmFor(shape, f32) : null);
  const toCall = (...[a, aOffset, b, bOffset, c, cOffset]: Parameters<GemmRunner>): GemmCall => ({
    m,
    n,
    k,
    a,
    aOffset,
    lda,
    transA,
    b,
    bOffset,
    ldb,
    transB,
    c,
    cOffset,
    ldc,
    accumulate: false,
  });
  // The last element each operand's extent reaches, past its offset (the bounds `gemm` checks).
  const aSpan = (transA ? k - 1 : m - 1) * lda + (transA ? m : k);
  const bSpan = (transB ? n - 1 : k - 1) * ldb + (transB ? k : n);
  const cSpan = (m - 1) * ldc + n;
  return (a, aOffset, b, bOffset, c, cOffset, bVersion) => {
    const fits =
      direct !== null &&
      a instanceof Float32Array === f32 &&
      b instanceof Float32Array === f32 &&
      c instanceof Float32Array === f32 &&
      aOffset >= 0 &&
      bOffset >= 0 &&
      cOffset >= 0 &&
      aOffset + aSpan <= a.length &&
      bOffset + bSpan <= b.length &&
      cOffset + cSpan <= c.length;
    // Anything else, errors included, is `gemm`'s business.
    if (fits && small !== null) small(a, aOffset, b, bOffset, c, cOffset, bVersion);
    else if (fits && !fallbackForced()) (direct as SmallGemmKernel)(a, aOffset, b, bOffset, c, cOffset);
    else gemm(toCall(a, aOffset, b, bOffset, c, cOffset));
  };
}

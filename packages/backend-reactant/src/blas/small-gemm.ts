/**
 * Tiny GEMMs in plain loops: each C element is the k-ascending sum of products, every product
 * and every sum rounded to the operands' precision (no fused multiply-add). That is how XLA's
 * CPU backend evaluates small dots (a naive emitted loop), so tiny products agree with XLA bit
 * for bit where OpenBLAS's FMA kernels would differ in the last bits; at these sizes the loop
 * is also as fast as a call into BLAS.
 *
 * The common case (overwrite C, k > 0) runs column blocks (small-gemm-codegen.ts): several C
 * elements of a row computed side by side, each with exactly the operations, in the order, of
 * the one-element loop below.
 */
import type { GemmCall } from "./gemm-call.ts";
import { BLOCK_WIDTHS, blockFor } from "./small-gemm-codegen.ts";

/** Products up to this many multiply-adds take the loop. */
export const SMALL_GEMM_LIMIT = 8192;

export function smallGemm(call: GemmCall): void {
  if (!call.accumulate && call.k > 0) {
    blockedGemm(call);
    return;
  }
  const { m, n, k, a, b, c } = call;
  const round = c instanceof Float32Array ? Math.fround : (v: number) => v;
  const aRow = call.transA ? 1 : call.lda;
  const aCol = call.transA ? call.lda : 1;
  const bRow = call.transB ? 1 : call.ldb;
  const bCol = call.transB ? call.ldb : 1;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let p = 0; p < k; p++) {
        const product = round(
          (a[call.aOffset + i * aRow + p * aCol] as number) * (b[call.bOffset + p * bRow + j * bCol] as number),
        );
        acc = p === 0 ? product : round(acc + product);
      }
      const at = call.cOffset + i * call.ldc + j;
      c[at] = call.accumulate ? round((c[at] as number) + acc) : acc;
    }
  }
}

function blockedGemm(call: GemmCall): void {
  const { m, n, k, a, b, c } = call;
  const f32 = c instanceof Float32Array;
  const aRow = call.transA ? 1 : call.lda;
  const aCol = call.transA ? call.lda : 1;
  const bRow = call.transB ? 1 : call.ldb;
  const bCol = call.transB ? call.ldb : 1;
  for (let i = 0; i < m; i++) {
    const aStart = call.aOffset + i * aRow;
    const cRow = call.cOffset + i * call.ldc;
    let j = 0;
    for (const width of BLOCK_WIDTHS) {
      const block = blockFor(width, f32);
      for (; j + width <= n; j += width) block(a, b, c, aStart, aCol, call.bOffset + j * bCol, bRow, bCol, cRow + j, k);
    }
  }
}

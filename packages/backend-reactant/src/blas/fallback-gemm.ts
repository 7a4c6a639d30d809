/**
 * The GEMM used when no BLAS library loads: pure TypeScript, cache-blocked, accumulating in
 * f64. It is a few times slower than OpenBLAS but exact enough to give the same answers
 * within rounding, so a worker without OpenBLAS still serves correct results.
 */
import type { GemmCall } from "./gemm-call.ts";

/** Rows of B kept hot in cache while a strip of A's rows streams over them. */
const K_BLOCK = 128;
/** Columns of C handled at once: the accumulator strip stays in L1/L2. */
const N_BLOCK = 512;

/** Copies op(X) (possibly transposed, with leading dimension ld) to a dense row-major rows x cols matrix. */
function packDense(
  data: Float32Array | Float64Array,
  offset: number,
  ld: number,
  transposed: boolean,
  rows: number,
  cols: number,
): Float64Array {
  const out = new Float64Array(rows * cols);
  if (!transposed) {
    for (let r = 0; r < rows; r++) {
      const base = offset + r * ld;
      for (let c = 0; c < cols; c++) out[r * cols + c] = data[base + c] as number;
    }
  } else {
    for (let c = 0; c < cols; c++) {
      const base = offset + c * ld;
      for (let r = 0; r < rows; r++) out[r * cols + c] = data[base + r] as number;
    }
  }
  return out;
}

export function fallbackGemm(call: GemmCall): void {
  const { m, n, k } = call;
  if (m === 0 || n === 0) return;
  const a = packDense(call.a, call.aOffset, call.lda, call.transA, m, k);
  const b = packDense(call.b, call.bOffset, call.ldb, call.transB, k, n);
  const acc = new Float64Array(m * n);
  for (let k0 = 0; k0 < k; k0 += K_BLOCK) {
    const k1 = Math.min(k, k0 + K_BLOCK);
    for (let j0 = 0; j0 < n; j0 += N_BLOCK) {
      const j1 = Math.min(n, j0 + N_BLOCK);
      let i = 0;
      // Four rows at a time so every B element loaded feeds four multiply-adds.
      for (; i + 4 <= m; i += 4) {
        const r0 = i * n;
        const r1 = r0 + n;
        const r2 = r1 + n;
        const r3 = r2 + n;
        for (let kk = k0; kk < k1; kk++) {
          const a0 = a[i * k + kk] as number;
          const a1 = a[(i + 1) * k + kk] as number;
          const a2 = a[(i + 2) * k + kk] as number;
          const a3 = a[(i + 3) * k + kk] as number;
          const bRow = kk * n;
          for (let j = j0; j < j1; j++) {
            const bv = b[bRow + j] as number;
            acc[r0 + j] = (acc[r0 + j] as number) + a0 * bv;
            acc[r1 + j] = (acc[r1 + j] as number) + a1 * bv;
            acc[r2 + j] = (acc[r2 + j] as number) + a2 * bv;
            acc[r3 + j] = (acc[r3 + j] as number) + a3 * bv;
          }
        }
      }
      for (; i < m; i++) {
        const r0 = i * n;
        for (let kk = k0; kk < k1; kk++) {
          const a0 = a[i * k + kk] as number;
          const bRow = kk * n;
          for (let j = j0; j < j1; j++) acc[r0 + j] = (acc[r0 + j] as number) + a0 * (b[bRow + j] as number);
        }
      }
    }
  }
  const c = call.c;
  for (let i = 0; i < m; i++) {
    const cRow = call.cOffset + i * call.ldc;
    for (let j = 0; j < n; j++) {
      const value = acc[i * n + j] as number;
      c[cRow + j] = call.accumulate ? (c[cRow + j] as number) + value : value;
    }
  }
}

/**
 * The GEMM used when no BLAS library loads: pure TypeScript, accumulating in f64. A and B are
 * packed into 4-row / 4-column panels (zero-padded), then a 4x4 register-blocked kernel keeps
 * sixteen accumulators in locals while it walks k, so each loaded value feeds four
 * multiply-adds. It is far slower than OpenBLAS but several times faster than plain loops,
 * and gives the same answers within rounding, so a worker without OpenBLAS stays correct.
 */
import type { GemmCall } from "./gemm-call.ts";

const PANEL = 4;

/** op(X) as panels: panel p holds rows p*4..p*4+3 (of op(X)) interleaved per k: out[(p*k + kk)*4 + r]. */
function packRowPanels(
  data: Float32Array | Float64Array,
  offset: number,
  ld: number,
  transposed: boolean,
  rows: number,
  depth: number,
): Float64Array {
  const panels = Math.ceil(rows / PANEL);
  const out = new Float64Array(panels * depth * PANEL);
  for (let r = 0; r < rows; r++) {
    const panelBase = Math.floor(r / PANEL) * depth * PANEL + (r % PANEL);
    for (let kk = 0; kk < depth; kk++) {
      const at = transposed ? offset + kk * ld + r : offset + r * ld + kk;
      out[panelBase + kk * PANEL] = data[at] as number;
    }
  }
  return out;
}

export function fallbackGemm(call: GemmCall): void {
  const { m, n, k } = call;
  if (m === 0 || n === 0) return;
  // A's rows and B's columns (B^T's rows) in panels of four.
  const a = packRowPanels(call.a, call.aOffset, call.lda, call.transA, m, k);
  const b = packRowPanels(call.b, call.bOffset, call.ldb, !call.transB, n, k);
  const c = call.c;
  const step = k * PANEL;
  for (let ip = 0; ip * PANEL < m; ip++) {
    const aBase = ip * step;
    for (let jp = 0; jp * PANEL < n; jp++) {
      const bBase = jp * step;
      let c00 = 0,
        c01 = 0,
        c02 = 0,
        c03 = 0;
      let c10 = 0,
        c11 = 0,
        c12 = 0,
        c13 = 0;
      let c20 = 0,
        c21 = 0,
        c22 = 0,
        c23 = 0;
      let c30 = 0,
        c31 = 0,
        c32 = 0,
        c33 = 0;
      for (let kk = 0; kk < step; kk += PANEL) {
        const a0 = a[aBase + kk] as number;
        const a1 = a[aBase + kk + 1] as number;
        const a2 = a[aBase + kk + 2] as number;
        const a3 = a[aBase + kk + 3] as number;
        const b0 = b[bBase + kk] as number;
        const b1 = b[bBase + kk + 1] as number;
        const b2 = b[bBase + kk + 2] as number;
        const b3 = b[bBase + kk + 3] as number;
        c00 += a0 * b0;
        c01 += a0 * b1;
        c02 += a0 * b2;
        c03 += a0 * b3;
        c10 += a1 * b0;
        c11 += a1 * b1;
        c12 += a1 * b2;
        c13 += a1 * b3;
        c20 += a2 * b0;
        c21 += a2 * b1;
        c22 += a2 * b2;
        c23 += a2 * b3;
        c30 += a3 * b0;
        c31 += a3 * b1;
        c32 += a3 * b2;
        c33 += a3 * b3;
      }
      const tile = [c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33];
      const rows = Math.min(PANEL, m - ip * PANEL);
      const cols = Math.min(PANEL, n - jp * PANEL);
      for (let r = 0; r < rows; r++) {
        const rowAt = call.cOffset + (ip * PANEL + r) * call.ldc + jp * PANEL;
        for (let col = 0; col < cols; col++) {
          const value = tile[r * PANEL + col] as number;
          c[rowAt + col] = call.accumulate ? (c[rowAt + col] as number) + value : value;
        }
      }
    }
  }
}

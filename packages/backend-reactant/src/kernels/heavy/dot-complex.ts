/**
 * dot_general on complex operands (or a complex result): four real GEMMs per batch over the
 * operands' real and imaginary parts.
 */
import { type ElemType, type NDArray, elementCount, isComplexType } from "../../array.ts";
import { gemm } from "../../blas/index.ts";
import type { DotPlan, OrientFn } from "./dot-general.ts";
import { toFloat64 } from "./element-io.ts";
import type { Oriented } from "./gemm-layout.ts";

const OP = "dot_general";

/** C[b] = A[b] * B[b] for every batch, with A/B addressed through their orientation. */
function batchedGemm(plan: DotPlan, a: Oriented, b: Oriented, c: Float32Array | Float64Array, accumulate: 0 | 1): void {
  const { m, n, k } = plan;
  for (let bi = 0; bi < plan.batch; bi++) {
    gemm({
      m,
      n,
      k,
      a: a.data as Float32Array | Float64Array,
      aOffset: bi * m * k,
      lda: a.transposed ? m : k,
      transA: a.transposed,
      b: b.data as Float32Array | Float64Array,
      bOffset: bi * k * n,
      ldb: b.transposed ? k : n,
      transB: b.transposed,
      c,
      cOffset: bi * m * n,
      ldc: n,
      accumulate: accumulate === 1,
    });
  }
}

/**
 * Complex product from four real GEMMs: (Ar + iAi)(Br + iBi). c64 results are computed in f32
 * like XLA does (f64 accumulation would be more exact but disagree with XLA's answers by more
 * than rounding); c128 in f64.
 */
export function complexDot(
  lhs: NDArray,
  rhs: NDArray,
  plan: DotPlan,
  orient: OrientFn,
  resultType: ElemType,
): Float32Array | Float64Array {
  const wide = resultType === "c128";
  const make = (n: number) =>
    wide ? new Float64Array(new ArrayBuffer(n * 8)) : new Float32Array(new ArrayBuffer(n * 4));
  const split = (a: NDArray, isLhs: boolean): [Oriented, Oriented] => {
    const n = elementCount(a.shape);
    const re = make(n);
    const im = make(n);
    if (isComplexType(a.type)) {
      for (let i = 0; i < n; i++) {
        re[i] = a.data[2 * i] as number;
        im[i] = a.data[2 * i + 1] as number;
      }
    } else re.set(toFloat64(a, OP));
    return [orient(a, re, 1, isLhs), orient(a, im, 1, isLhs)];
  };
  const [ar, ai] = split(lhs, true);
  const [br, bi] = split(rhs, false);
  const count = plan.batch * plan.m * plan.n;
  const re = make(count);
  const im = make(count);
  const negAi: Oriented = { data: (ai.data as Float64Array).map((v) => -v), transposed: ai.transposed };
  batchedGemm(plan, ar, br, re, 0);
  batchedGemm(plan, negAi, bi, re, 1);
  batchedGemm(plan, ar, bi, im, 0);
  batchedGemm(plan, ai, br, im, 1);
  const out = make(2 * count);
  for (let i = 0; i < count; i++) {
    out[2 * i] = re[i] as number;
    out[2 * i + 1] = im[i] as number;
  }
  return out;
}

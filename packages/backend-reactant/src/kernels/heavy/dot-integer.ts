/** dot_general's exact integer and boolean arithmetic (see integerDot). */
import { type ElemType, type NDArray, allocData, isIntegerType } from "../../array.ts";
import type { DotPlan, OrientFn } from "./dot-general.ts";
import { toBigInts, toInt32Bits } from "./element-io.ts";

/**
 * Exact integer dot with wrap-around: results up to 32 bits in int32 arithmetic (exact modulo
 * 2^32, so narrower types wrap correctly when stored), 64-bit results in BigInt. i1 results
 * use AND for the product and OR for the sum, as XLA does for PRED.
 */
export function integerDot(
  lhs: NDArray,
  rhs: NDArray,
  plan: DotPlan,
  orient: OrientFn,
  resultType: ElemType,
  op: string,
): NDArray["data"] {
  const { batch, m, n, k } = plan;
  const out = allocData(resultType, batch * m * n);
  const wide = resultType === "i64" || resultType === "ui64";
  const a = orient(lhs, wide ? toBigInts(lhs) : toInt32Bits(lhs, op), 1, true);
  const b = orient(rhs, wide ? toBigInts(rhs) : toInt32Bits(rhs, op), 1, false);
  const aRow = a.transposed ? 1 : k;
  const aCol = a.transposed ? m : 1;
  const bRow = b.transposed ? 1 : n;
  const bCol = b.transposed ? k : 1;
  for (let bi = 0; bi < batch; bi++) {
    const aBase = bi * m * k;
    const bBase = bi * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        const target = (bi * m + i) * n + j;
        if (wide) {
          const ad = a.data as BigInt64Array;
          const bd = b.data as BigInt64Array;
          let acc = 0n;
          for (let kk = 0; kk < k; kk++)
            acc += (ad[aBase + i * aRow + kk * aCol] as bigint) * (bd[bBase + kk * bRow + j * bCol] as bigint);
          (out as BigInt64Array)[target] = BigInt.asIntN(64, acc);
        } else if (resultType === "i1") {
          const ad = a.data as Int32Array;
          const bd = b.data as Int32Array;
          let acc = 0;
          for (let kk = 0; kk < k && acc === 0; kk++)
            if (ad[aBase + i * aRow + kk * aCol] && bd[bBase + kk * bRow + j * bCol]) acc = 1;
          out[target] = acc;
        } else {
          const ad = a.data as Int32Array;
          const bd = b.data as Int32Array;
          let acc = 0;
          for (let kk = 0; kk < k; kk++)
            acc =
              (acc +
                Math.imul(ad[aBase + i * aRow + kk * aCol] as number, bd[bBase + kk * bRow + j * bCol] as number)) |
              0;
          out[target] = acc;
        }
      }
    }
  }
  return out;
}

/** Largest magnitude of each narrow integer type (whose products a float GEMM sums exactly). */
const NARROW_MAX: Partial<Record<ElemType, number>> = { i8: 128, ui8: 255, i16: 32768, ui16: 65535 };

/**
 * "f32" or "f64" where a float GEMM of these integer operands is exact (k products of the largest
 * magnitudes stay within 2^24 or 2^53), null otherwise. Results wider than the operands wrap as
 * the integer loop does (typed-array stores are modular), but the exact sum never needs to.
 */
export function exactFloatGemm(lhs: ElemType, rhs: ElemType, result: ElemType, k: number): "f32" | "f64" | null {
  const a = NARROW_MAX[lhs];
  const b = NARROW_MAX[rhs];
  if (a === undefined || b === undefined || result === "i1" || !isIntegerType(result)) return null;
  const bound = a * b * Math.max(k, 1);
  if (bound <= 2 ** 24) return "f32";
  return bound <= 2 ** 53 ? "f64" : null;
}

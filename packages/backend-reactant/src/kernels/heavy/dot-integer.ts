/** dot_general's exact integer and boolean arithmetic (see integerDot). */
import { type ElemType, type NDArray, allocData } from "../../array.ts";
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

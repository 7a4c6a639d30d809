import { type NDArray, allocData, elementCount } from "../array.ts";
import { isFloatType } from "../array.ts";
import { readScalar, writeScalar } from "../elem/scalar.ts";
import { totalOrderKeys } from "./total-order.ts";
import { unsupported } from "./errors.ts";

/**
 * chlo.top_k: the k largest entries of the last axis, largest first, ties in index order.
 * Floats are ordered by IEEE totalOrder as XLA does (+NaN first, -NaN last, -0 after +0).
 */
export function topK(x: NDArray, k: number): NDArray[] {
  if (x.type === "c64" || x.type === "c128") throw unsupported("top_k", "top_k on complex numbers");
  const rank = x.shape.length;
  const n = x.shape[rank - 1] ?? 1;
  if (k > n) throw unsupported("top_k", `k = ${k} exceeds the last dimension ${n}`);
  const rows = elementCount(x.shape) / Math.max(n, 1);
  const outShape = [...x.shape.slice(0, -1), k];
  const values: NDArray = { type: x.type, shape: outShape, data: allocData(x.type, rows * k) };
  const indices: NDArray = { type: "i32", shape: [...outShape], data: allocData("i32", rows * k) };
  const all = isFloatType(x.type) ? totalOrderKeys(x) : null;
  const order = new Array<number>(n);
  const keys = new Array<number | bigint>(n);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < n; j++) {
      order[j] = j;
      keys[j] = all ? (all[r * n + j] as number | bigint) : (readScalar(x, r * n + j) as number | bigint);
    }
    order.sort((p, q) => {
      const a = keys[p] as number | bigint;
      const b = keys[q] as number | bigint;
      if (a > b) return -1;
      if (a < b) return 1;
      return p - q;
    });
    for (let j = 0; j < k; j++) {
      const src = order[j] as number;
      writeScalar(values, r * k + j, readScalar(x, r * n + src));
      (indices.data as Int32Array)[r * k + j] = src;
    }
  }
  return [values, indices];
}

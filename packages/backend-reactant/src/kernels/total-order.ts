import { type NDArray, elementCount } from "../array.ts";
import { unsupported } from "./errors.ts";

/**
 * compare with compare_type TOTALORDER: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN,
 * decided on the raw bits (sign-magnitude turned into a monotonic integer key).
 */
export function compareTotalOrder(direction: string, a: NDArray, b: NDArray): NDArray {
  const ka = totalOrderKeys(a);
  const kb = totalOrderKeys(b);
  const n = Math.max(elementCount(a.shape), elementCount(b.shape));
  const sa = ka.length === 1 ? 0 : 1;
  const sb = kb.length === 1 ? 0 : 1;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const x = ka[sa * i] as number | bigint;
    const y = kb[sb * i] as number | bigint;
    out[i] = test(direction, x, y) ? 1 : 0;
  }
  return { type: "i1", shape: ka.length === 1 ? [...b.shape] : [...a.shape], data: out };
}

function test(direction: string, x: number | bigint, y: number | bigint): boolean {
  switch (direction) {
    case "EQ":
      return x === y;
    case "NE":
      return x !== y;
    case "LT":
      return x < y;
    case "LE":
      return x <= y;
    case "GT":
      return x > y;
    case "GE":
      return x >= y;
  }
  throw unsupported("compare", `comparison direction ${direction}`);
}

/** Per element, an integer that orders as IEEE totalOrder does (for f16, bf16, f32, f64). */
export function totalOrderKeys(x: NDArray): (number | bigint)[] {
  const d = x.data;
  const out: (number | bigint)[] = [];
  if (x.type === "f64") {
    const bits = new BigInt64Array(d.buffer, d.byteOffset, d.length);
    for (const v of bits) out.push(v < 0n ? v ^ 0x7fffffffffffffffn : v);
  } else if (x.type === "f32") {
    const bits = new Int32Array(d.buffer, d.byteOffset, d.length);
    for (const v of bits) out.push(v < 0 ? v ^ 0x7fffffff : v);
  } else {
    for (const raw of d as Uint16Array) {
      const v = (raw << 16) >> 16;
      out.push(v < 0 ? v ^ 0x7fff : v);
    }
  }
  return out;
}

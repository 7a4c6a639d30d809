import type { NDArray } from "../../src/array.ts";

/**
 * n random bit patterns of `type` (f32, or a 16-bit float type): subnormals, overflow, NaN,
 * infinities and both zeros all occur; every seventh f32 near f16's and bf16's limits.
 */
export function randomBits(type: string, n: number, seed: number): NDArray {
  let s = seed;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
  if (type === "f32") {
    const data = new Float32Array(n);
    const bits = new Uint32Array(data.buffer);
    for (let i = 0; i < n; i++) bits[i] = i % 7 === 0 ? (next() & 0x807fffff) | 0x38000000 : next();
    return { type: "f32", shape: [n], data };
  }
  const data = new Uint16Array(n);
  for (let i = 0; i < n; i++) data[i] = next() >>> 16;
  return { type: type as NDArray["type"], shape: [n], data };
}

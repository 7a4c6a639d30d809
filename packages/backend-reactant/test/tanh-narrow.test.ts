import { expect, test } from "bun:test";
import { tanhNarrow } from "../src/elem/tanh-narrow.ts";

test("tanh for f32 results rounds as Math.tanh does, around the series' edge and far out", () => {
  const words = new Uint32Array(1);
  const f32 = new Float32Array(words.buffer);
  let mismatches = 0;
  const check = (x: number) => {
    if (Math.fround(tanhNarrow(x)) !== Math.fround(Math.tanh(x))) mismatches++;
  };
  let seed = 3;
  for (let i = 0; i < 300_000; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    // Exponents from 2^-40 to 2^8 and both signs: the whole curve, tiny values included.
    words[0] = (seed & 0x807fffff) | ((87 + (seed % 48)) << 23);
    check(f32[0] as number);
  }
  // Every f32 within 2^16 patterns of the series / exponential switch at 1/8, both signs.
  for (let d = -65536; d < 65536; d++) {
    words[0] = 0x3e000000 + d;
    check(f32[0] as number);
    check(-(f32[0] as number));
  }
  expect(mismatches).toBe(0);
  expect(Number.isNaN(tanhNarrow(Number.NaN))).toBe(true);
  expect(Object.is(tanhNarrow(-0), -0)).toBe(true);
  expect(tanhNarrow(Number.POSITIVE_INFINITY)).toBe(1);
  expect(tanhNarrow(Number.NEGATIVE_INFINITY)).toBe(-1);
  expect(tanhNarrow(1e10)).toBe(1);
});

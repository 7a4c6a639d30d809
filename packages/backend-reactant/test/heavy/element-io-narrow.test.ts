import { expect, test } from "bun:test";
import { bf16BitsToNumber, f16BitsToNumber, numberToBf16Bits, numberToF16Bits } from "@xlaserve/core";
import { fromFloats, toFloat32 } from "../../src/kernels/heavy/element-io.ts";

/**
 * The GEMM operands' and results' bf16 / f16 conversions (bit shifts and bit rounding) give the
 * value-by-value converters' exact bits on every finite f32 pattern class.
 */
test("bf16 and f16 widen exactly and f32 results narrow to bf16 / f16 as the value converters do", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  const wide = toFloat32({ type: "bf16", shape: [65536], data: all }, "t");
  let mismatches = 0;
  for (let i = 0; i < 65536; i++) {
    const e = bf16BitsToNumber(i);
    if (!(Object.is(wide[i], Math.fround(e)) || (Number.isNaN(e) && Number.isNaN(wide[i] as number)))) mismatches++;
  }
  const wideF16 = toFloat32({ type: "f16", shape: [65536], data: all }, "t");
  for (let i = 0; i < 65536; i++) {
    const e = f16BitsToNumber(i);
    if (!(Object.is(wideF16[i], e) || (Number.isNaN(e) && Number.isNaN(wideF16[i] as number)))) mismatches++;
  }
  const words = new Uint32Array(1 << 18);
  let seed = 5;
  for (let i = 0; i < words.length; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    // Low halves 0x8000 (bf16 ties) and 0x1000 masks (f16 ties) often, random otherwise.
    words[i] = i % 4 === 0 ? (seed & 0xffff0000) | 0x8000 : i % 4 === 1 ? (seed & 0xffffe000) | 0x1000 : seed;
  }
  words.set([0x7f800000, 0xff800000, 0x7f7fffff, 0, 0x80000000, 0x477fefff, 0x477ff000, 0x387fc000], 0);
  const values = new Float32Array(words.buffer);
  const b = fromFloats("bf16", values, "t") as Uint16Array;
  const h = fromFloats("f16", values, "t") as Uint16Array;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (Number.isNaN(v)) continue;
    if (b[i] !== numberToBf16Bits(v)) mismatches++;
    if (h[i] !== numberToF16Bits(v)) mismatches++;
  }
  expect(mismatches).toBe(0);
});

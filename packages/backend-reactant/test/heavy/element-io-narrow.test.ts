import { expect, test } from "bun:test";
import { bf16BitsToNumber, f16BitsToNumber, numberToBf16Bits, numberToF16Bits } from "@xlaserve/core";
import { fromFloats, toFloat32, toFloat64 } from "../../src/kernels/heavy/element-io.ts";

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

test("integer operands widen to f32 and f64 as Math.fround / Number of each value, from storage longer than the shape", () => {
  const edges = [0, 1, -1, 127, -128, 255, 32767, -32768, 65535, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 25) - 2, 2 ** 31 - 1];
  const cases: [string, ArrayLike<number> & { length: number }][] = [
    ["i8", new Int8Array(edges)],
    ["ui8", new Uint8Array(edges)],
    ["i16", new Int16Array(edges)],
    ["ui16", new Uint16Array(edges)],
    ["i32", new Int32Array(edges)],
    ["ui32", new Uint32Array(edges.map((e) => e >>> 0))],
  ];
  for (const [type, data] of cases) {
    // One element fewer than stored: only the shape's elements are read.
    const n = data.length - 1;
    const array = { type, shape: [n], data } as unknown as Parameters<typeof toFloat32>[0];
    const f32 = toFloat32(array, "t");
    const f64 = toFloat64(array, "t");
    expect(f32.length).toBe(n);
    expect(Array.from(f32)).toEqual(Array.from({ length: n }, (_, i) => Math.fround(data[i] as number)));
    expect(Array.from(f64)).toEqual(Array.from({ length: n }, (_, i) => data[i] as number));
  }
  // 2^24 + 1 and 2^24 + 3 round to even in f32: 2^24 and 2^24 + 4.
  expect(
    Array.from(toFloat32({ type: "i32", shape: [2], data: new Int32Array([2 ** 24 + 1, 2 ** 24 + 3]) }, "t")),
  ).toEqual([2 ** 24, 2 ** 24 + 4]);
});

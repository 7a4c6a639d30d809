import { describe, expect, test } from "bun:test";
import { type ConvAttributes, convGeometry } from "../../src/kernels/heavy/conv-attributes.ts";
import { im2col, tapTables } from "../../src/kernels/heavy/im2col.ts";
import { im2colWorkspace } from "../../src/kernels/heavy/im2col-wasm.ts";
import { fromFloats, toFloat32 } from "../../src/kernels/heavy/element-io.ts";
import { NHWC_HWIO } from "./conv-layouts.ts";
import { randInt, randomF32, rng } from "./helpers.ts";

/** The bytes of a float view (NaN payloads and signed zeros included). */
function bytes(view: Float32Array | Float64Array, count: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, count * view.BYTES_PER_ELEMENT).slice();
}

describe("WebAssembly im2col", () => {
  test("fills exactly the JavaScript im2col's rows on 120 random 2-d windows, groups and chunks", () => {
    for (let seed = 1; seed <= 120; seed++) {
      const next = rng(seed);
      const groups = next() < 0.3 ? randInt(next, 2, 3) : 1;
      const groupIn = randInt(next, 1, 9);
      const batch = randInt(next, 1, 3);
      const shape = [batch, randInt(next, 1, 9), randInt(next, 1, 9), groupIn * groups];
      const kernel = [randInt(next, 1, 4), randInt(next, 1, 4), groupIn, groups * randInt(next, 1, 2)];
      const attrs: ConvAttributes = {
        dims: NHWC_HWIO,
        windowStrides: [randInt(next, 1, 3), randInt(next, 1, 3)],
        padding: [
          [randInt(next, -1, 2), randInt(next, -1, 2)],
          [randInt(next, -1, 2), randInt(next, -1, 2)],
        ],
        lhsDilation: [randInt(next, 1, 2), randInt(next, 1, 2)],
        rhsDilation: [randInt(next, 1, 2), randInt(next, 1, 2)],
        featureGroupCount: groups,
      };
      const lhs = randomF32(next, shape);
      const f64 = next() < 0.3;
      const data = f64 ? Float64Array.from(lhs.data as Float32Array) : (lhs.data as Float32Array);
      const g = convGeometry(lhs, randomF32(next, kernel), attrs);
      const positions = (g.outSpatial[0] as number) * (g.outSpatial[1] as number);
      const depth = (g.kernelSpatial[0] as number) * (g.kernelSpatial[1] as number) * groupIn;
      if (positions === 0) continue;
      const tables = tapTables(g);
      const chunk = randInt(next, 1, positions);
      const ws = im2colWorkspace(g, tables, f64, data.length, chunk, depth);
      if (!ws) throw new Error("WebAssembly SIMD is missing");
      ws.input.set(data);
      const expected = f64 ? new Float64Array(chunk * depth) : new Float32Array(chunk * depth);
      for (let group = 0; group < groups; group++)
        for (let n = 0; n < batch; n++)
          for (let row = 0; row < positions; row += chunk) {
            const end = Math.min(positions, row + chunk);
            const src = { data, slots: 1, batchIndex: n, channelOffset: group * groupIn, channelCount: groupIn };
            im2col(g, tables, src, row, end, expected);
            ws.fill(n, group * groupIn, groupIn, row, end);
            expect(bytes(ws.col, (end - row) * depth)).toEqual(bytes(expected, (end - row) * depth));
          }
    }
  });
});

describe("WebAssembly bf16 conversions", () => {
  const g = convGeometry(
    { type: "f32", shape: [1, 3, 3, 1], data: new Float32Array(9) },
    { type: "f32", shape: [2, 2, 1, 1], data: new Float32Array(4) },
    { dims: NHWC_HWIO },
  );

  test("narrowing rounds every f32 as element-io does (ties to even, overflow to infinity), NaNs quiet with their sign", () => {
    const next = rng(3);
    const count = 4099;
    const bits = new Uint32Array(count);
    // Random bits, plus the edges: midpoints, the largest finite values, infinities, zeros, NaNs.
    for (let i = 0; i < count; i++) bits[i] = Math.floor(next() * 2 ** 32) >>> 0;
    const edges = [0x3f808000, 0x3f818000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0, 0x80000000];
    edges.forEach((b, i) => {
      bits[i] = b;
    });
    bits[20] = 0x7fc00001;
    bits[21] = 0xffa00000;
    const values = new Float32Array(bits.buffer);
    const ws = im2colWorkspace(g, tapTables(g), false, 9, 4, 4, count);
    if (!ws) throw new Error("WebAssembly SIMD is missing");
    ws.output.set(values);
    const actual = new Uint16Array(count);
    ws.narrowBf16(actual);
    for (let i = 0; i < count; i++) {
      const u = bits[i] as number;
      const expected =
        (u & 0x7fffffff) > 0x7f800000
          ? ((u >>> 16) | 0x40) & 0xffff
          : ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
      if (actual[i] !== expected) throw new Error(`bits ${u.toString(16)}: got ${actual[i]}, expected ${expected}`);
    }
  });

  test("widening puts every bf16 value's bits on top of an f32", () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const ws = im2colWorkspace(g, tapTables(g), false, all.length, 4, 4);
    if (!ws) throw new Error("WebAssembly SIMD is missing");
    ws.widenBf16(all);
    const widened = new Uint32Array(ws.input.buffer, ws.input.byteOffset, all.length);
    for (let i = 0; i < all.length; i++) expect(widened[i]).toBe((i << 16) >>> 0);
  });
});

describe("WebAssembly f16 conversions", () => {
  const g = convGeometry(
    { type: "f32", shape: [1, 3, 3, 1], data: new Float32Array(9) },
    { type: "f32", shape: [2, 2, 1, 1], data: new Float32Array(4) },
    { dims: NHWC_HWIO },
  );

  test("narrowing rounds as element-io's f16 store does: every f16 step's midpoints, subnormals, overflow, NaN", () => {
    // Each top-16-bit f32 pattern with low bits at, around and between f16 rounding points
    // (f16's step is 2^13 f32 ulps in the normal range, more below it), then random bits.
    const lows = [0, 0x1000, 0x0fff, 0x1001, 0x2000, 0x3000, 0x8000, 0xffff, 0x7000, 0x5001];
    const count = 65536 * lows.length + 4099;
    const bits = new Uint32Array(count);
    for (let h = 0; h < 65536; h++)
      for (let j = 0; j < lows.length; j++) bits[h * lows.length + j] = ((h << 16) | (lows[j] as number)) >>> 0;
    const next = rng(5);
    for (let i = 65536 * lows.length; i < count; i++) bits[i] = Math.floor(next() * 2 ** 32) >>> 0;
    const values = new Float32Array(bits.buffer);
    const ws = im2colWorkspace(g, tapTables(g), false, 9, 4, 4, count);
    if (!ws) throw new Error("WebAssembly SIMD is missing");
    ws.output.set(values);
    const actual = new Uint16Array(count);
    ws.narrowF16(actual);
    const expected = fromFloats("f16", values, "t") as Uint16Array;
    const wrong: string[] = [];
    for (let i = 0; i < count; i++) if (actual[i] !== expected[i]) wrong.push((bits[i] as number).toString(16));
    expect(wrong.slice(0, 5)).toEqual([]);
    // Hand-checked: 1 + 2^-11 (a tie) to 1, 65519 to 65504, 65520 to infinity, 2^-25 (a tie) to 0, NaN.
    ws.output.set([1 + 2 ** -11, 65519, 65520, 2 ** -25, -(3 * 2 ** -25), Number.NaN, -0, 2 ** -24]);
    const few = new Uint16Array(8);
    ws.narrowF16(few);
    expect(Array.from(few)).toEqual([0x3c00, 0x7bff, 0x7c00, 0, 0x8002, 0x7e00, 0x8000, 1]);
  });

  test("widening gives every f16 value exactly", () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const ws = im2colWorkspace(g, tapTables(g), false, all.length, 4, 4);
    if (!ws) throw new Error("WebAssembly SIMD is missing");
    ws.widenF16(all);
    const expected = toFloat32({ type: "f16", shape: [65536], data: all }, "t");
    for (let i = 0; i < all.length; i++) {
      const e = expected[i] as number;
      const a = ws.input[i] as number;
      if (!(Object.is(a, e) || (Number.isNaN(a) && Number.isNaN(e))))
        throw new Error(`f16 ${i}: got ${a}, expected ${e}`);
    }
  });
});

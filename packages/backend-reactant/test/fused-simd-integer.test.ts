import { afterAll, describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { fusedSimdRuns, setFusedSimdDisabled } from "../src/plan/fused-simd.ts";
import { Program } from "../src/plan/program.ts";
import { randomBits } from "./helpers/random-bits.ts";

/**
 * The integer ends of the WebAssembly SIMD fused loops: an i32 accumulator converted to f32,
 * a float tree converted to i8 / i16 / i32 (truncation, saturation, NaN -> 0), and the
 * roundings to an integer (half to even, floor, ceil) on every float type, against the
 * JavaScript loop, the unfused kernels and values worked out by hand.
 */

function run(text: string, args: NDArray[], fuse: boolean, simd: boolean): NDArray {
  setFusedSimdDisabled(!simd);
  const f = new Program(parseModule(text), { fuse }).func("main");
  return (f.invoke(args, { arena: new Arena({ pool: true }), failures: [] }) as NDArray[])[0] as NDArray;
}

/** Runs `text` three ways, checks the SIMD loop ran and all three agree byte for byte; the SIMD result. */
function agree(text: string, args: NDArray[]): NDArray {
  const before = fusedSimdRuns();
  const simd = run(text, args, true, true);
  expect(fusedSimdRuns()).toBeGreaterThan(before);
  const loop = run(text, args, true, false);
  const plain = run(text, args, false, false);
  const bytes = (a: NDArray) => Array.from(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
  expect(bytes(simd)).toEqual(bytes(loop));
  expect(bytes(simd)).toEqual(bytes(plain));
  return simd;
}

/** i32 values: random ones, the extremes, and integers f32 cannot hold (they round, ties to even). */
function accumulators(n: number, seed: number): Int32Array {
  const out = new Int32Array(n);
  let s = seed;
  const edges = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24) - 1, 2 ** 25 + 2, 16777217];
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = i % 5 === 0 ? (edges[(i / 5) % edges.length] as number) : i % 2 ? s | 0 : (s % 20001) - 10000;
  }
  return out;
}

/** A quantized layer's epilogue: scale the accumulator per column, add a bias, ReLU, requantize to i8. */
function requantize(rows: number, cols: number, scale: number): string {
  const T = `tensor<${rows}x${cols}xf32>`;
  const R = `tensor<${cols}xf32>`;
  return `func.func @main(%acc: tensor<${rows}x${cols}xi32>, %s: ${R}, %b: ${R}) -> tensor<${rows}x${cols}xi8> {
    %lo = stablehlo.constant dense<-127.0> : ${T}
    %hi = stablehlo.constant dense<127.0> : ${T}
    %zero = stablehlo.constant dense<0.0> : ${T}
    %q = stablehlo.constant dense<${scale}> : ${T}
    %0 = stablehlo.convert %acc : (tensor<${rows}x${cols}xi32>) -> ${T}
    %sb = stablehlo.broadcast_in_dim %s, dims = [1] : (${R}) -> ${T}
    %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (${R}) -> ${T}
    %1 = stablehlo.multiply %0, %sb : ${T}
    %2 = stablehlo.add %1, %bb : ${T}
    %3 = stablehlo.maximum %2, %zero : ${T}
    %4 = stablehlo.divide %3, %q : ${T}
    %5 = stablehlo.round_nearest_even %4 : ${T}
    %6 = stablehlo.maximum %lo, %5 : ${T}
    %7 = stablehlo.minimum %hi, %6 : ${T}
    %8 = stablehlo.convert %7 : (${T}) -> tensor<${rows}x${cols}xi8>
    return %8 : tensor<${rows}x${cols}xi8>
  }`;
}

/** Ties, the integer types' bounds and just past them, huge values, infinities, NaN, both zeros. */
const EDGES = [
  0,
  -0,
  0.5,
  -0.5,
  1.5,
  -1.5,
  2.5,
  -2.5,
  126.5,
  127,
  127.5,
  128,
  128.5,
  -127.5,
  -128,
  -128.5,
  -129,
  255.5,
  32767,
  32767.5,
  32768,
  -32768,
  -32768.5,
  -32769,
  2 ** 31,
  -(2 ** 31),
  2 ** 31 + 256,
  -(2 ** 32),
  1e10,
  -1e10,
  3e38,
  -3e38,
  1e-45,
  0.99999994,
  -0.99999994,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
  -Number.NaN,
];

describe("integer ends of the SIMD fused loops", () => {
  afterAll(() => setFusedSimdDisabled(false));

  test("an i32 accumulator requantized to i8: rows that end mid-vector, short rows, every tie", () => {
    for (const [rows, cols] of [
      [32, 256],
      [16, 37],
      [30, 3],
    ] as const) {
      for (let seed = 1; seed <= 3; seed++) {
        const n = rows * cols;
        const scales = new Float32Array(cols).map((_, j) => (j % 3 === 0 ? 1e-3 : j % 3 === 1 ? 0.05 : 1));
        const bias = new Float32Array(cols).map((_, j) => (j % 4) * 0.25 - 0.5);
        const args: NDArray[] = [
          { type: "i32", shape: [rows, cols], data: accumulators(n, seed) },
          { type: "f32", shape: [cols], data: scales },
          { type: "f32", shape: [cols], data: bias },
        ];
        agree(requantize(rows, cols, 0.5), args);
      }
    }
    // Hand-worked: scale 1, bias 0, ReLU, divide by 1, round half to even, clip to +-127.
    const acc = new Int32Array([0, 1, -5, 126, 127, 128, 2 ** 31 - 1, -(2 ** 31)]);
    const cols = 8;
    const rows = 8;
    const data = new Int32Array(rows * cols);
    for (let i = 0; i < rows; i++) data.set(acc, i * cols);
    const out = agree(requantize(rows, cols, 1), [
      { type: "i32", shape: [rows, cols], data },
      { type: "f32", shape: [cols], data: new Float32Array(cols).fill(0.5) },
      { type: "f32", shape: [cols], data: new Float32Array(cols) },
    ]);
    // x / 2 rounded: 0, 0.5 -> 0, ReLU'd -> 0, 63, 63.5 -> 64, 64, saturates to 127, 0.
    expect(Array.from((out.data as Int8Array).subarray(0, cols))).toEqual([0, 0, 0, 63, 64, 64, 127, 0]);
  });

  for (const to of ["i8", "i16", "i32"]) {
    for (const from of ["f32", "bf16", "f16"]) {
      test(`${from} -> ${to}: truncation, saturation and NaN -> 0 after each rounding to an integer`, () => {
        const n = 37 * 8;
        const F = `tensor<${n}x${from}>`;
        const I = `tensor<${n}x${to}>`;
        const f32Edges = new Float32Array(n).map((_, i) => EDGES[i % EDGES.length] as number);
        // The edges as this float type's bits (their nearest values there), then random bits.
        const edgesOf = (): NDArray => {
          if (from === "f32") return { type: "f32", shape: [n], data: f32Edges };
          const text = `func.func @main(%x: tensor<${n}xf32>) -> ${F} {
            %0 = stablehlo.convert %x : (tensor<${n}xf32>) -> ${F}
            return %0 : ${F}
          }`;
          return run(text, [{ type: "f32", shape: [n], data: f32Edges }], false, false);
        };
        for (const round of ["round_nearest_even", "floor", "ceil", null]) {
          const body = round
            ? `%0 = stablehlo.${round} %x : ${F}
            %1 = stablehlo.convert %0 : (${F}) -> ${I}
            return %1 : ${I}`
            : `%0 = stablehlo.negate %x : ${F}
            %1 = stablehlo.convert %0 : (${F}) -> ${I}
            return %1 : ${I}`;
          const text = `func.func @main(%x: ${F}) -> ${I} {\n${body}\n}`;
          agree(text, [edgesOf()]);
          for (let seed = 1; seed <= 3; seed++) agree(text, [{ ...randomBits(from, n, seed), shape: [n] }]);
        }
        if (from !== "f32") return;
        // Hand-worked: half to even, then saturated at the type's bounds; NaN to 0.
        const text = `func.func @main(%x: ${F}) -> ${I} {
          %0 = stablehlo.round_nearest_even %x : ${F}
          %1 = stablehlo.convert %0 : (${F}) -> ${I}
          return %1 : ${I}
        }`;
        const out = agree(text, [edgesOf()]).data;
        const [lo, hi] = to === "i8" ? [-128, 127] : to === "i16" ? [-32768, 32767] : [-(2 ** 31), 2 ** 31 - 1];
        const at = (v: number) => out[EDGES.findIndex((e) => Object.is(e, v))] as number;
        expect([at(0.5), at(-0.5), at(1.5), at(2.5), at(-2.5)]).toEqual([0, 0, 2, 2, -2]);
        expect([at(1e10), at(-1e10), at(Number.POSITIVE_INFINITY), at(Number.NEGATIVE_INFINITY)]).toEqual([
          hi,
          lo,
          hi,
          lo,
        ]);
        expect(at(Number.NaN)).toBe(0);
        expect(at(127.5)).toBe(Math.min(128, hi));
        expect(at(-128.5)).toBe(Math.max(-128, lo));
      });
    }
  }

  test("an i32 leaf read per column and per row converts like a dense one (a floor makes SIMD pay)", () => {
    const [rows, cols] = [12, 21];
    const T = `tensor<${rows}x${cols}xf32>`;
    const text = `func.func @main(%r: tensor<${cols}xi32>, %c: tensor<${rows}xi32>, %x: ${T}) -> ${T} {
      %0 = stablehlo.convert %r : (tensor<${cols}xi32>) -> tensor<${cols}xf32>
      %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<${cols}xf32>) -> ${T}
      %2 = stablehlo.convert %c : (tensor<${rows}xi32>) -> tensor<${rows}xf32>
      %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<${rows}xf32>) -> ${T}
      %4 = stablehlo.multiply %1, %x : ${T}
      %5 = stablehlo.add %4, %3 : ${T}
      %6 = stablehlo.floor %5 : ${T}
      return %6 : ${T}
    }`;
    const x = new Float32Array(rows * cols).map((_, i) => (i % 7) - 3);
    agree(text, [
      { type: "i32", shape: [cols], data: accumulators(cols, 7) },
      { type: "i32", shape: [rows], data: accumulators(rows, 9) },
      { type: "f32", shape: [rows, cols], data: x },
    ]);
  });
});

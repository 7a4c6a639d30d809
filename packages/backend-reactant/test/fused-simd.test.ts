import { afterAll, describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { fusedSimdRuns, setFusedSimdDisabled } from "../src/plan/fused-simd.ts";
import { Program } from "../src/plan/program.ts";
import { randomBits } from "./helpers/random-bits.ts";
import { slicedTree } from "./helpers/fused-trees.ts";

/**
 * The WebAssembly SIMD fused loops against the JavaScript ones (and the unfused kernels) on
 * random bit patterns of each type: subnormals, overflow, NaN, infinities and both zeros all
 * occur, and rows of 37 elements end mid-vector.
 */
const [ROWS, COLS] = [16, 37];
const WIDE: Record<string, string> = { f32: "f16", bf16: "f32", f16: "bf16" };

/** Every op the SIMD loops take, each class of leaf (row, column, scalar, dense), converts. */
function chain(t: string): string {
  const T = `tensor<${ROWS}x${COLS}x${t}>`;
  const w = WIDE[t] as string;
  const W = `tensor<${ROWS}x${COLS}x${w}>`;
  return `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${COLS}x${t}>, %c: tensor<${ROWS}x${t}>, %s: tensor<${t}>) -> ${T} {
    %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<${COLS}x${t}>) -> ${T}
    %cb = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<${ROWS}x${t}>) -> ${T}
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<${t}>) -> ${T}
    %0 = stablehlo.multiply %x, %rb : ${T}
    %1 = stablehlo.add %0, %cb : ${T}
    %2 = stablehlo.subtract %1, %sb : ${T}
    %3 = stablehlo.divide %2, %y : ${T}
    %4 = stablehlo.maximum %3, %x : ${T}
    %5 = stablehlo.abs %y : ${T}
    %6 = stablehlo.sqrt %5 : ${T}
    %7 = stablehlo.minimum %4, %6 : ${T}
    %8 = stablehlo.negate %7 : ${T}
    %9 = stablehlo.convert %8 : (${T}) -> ${W}
    %10 = stablehlo.convert %x : (${T}) -> ${W}
    %11 = stablehlo.multiply %9, %10 : ${W}
    %12 = stablehlo.convert %11 : (${W}) -> ${T}
    %13 = stablehlo.sqrt %y : ${T}
    %14 = stablehlo.add %12, %13 : ${T}
    return %14 : ${T}
  }`;
}

/** Functions between modules: on dense values, nested, and on a per-row value (layer norm's rsqrt). */
function stagedChain(t: string): string {
  const T = `tensor<${ROWS}x${COLS}x${t}>`;
  const C = `tensor<${ROWS}x${t}>`;
  return `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${COLS}x${t}>, %c: ${C}, %s: tensor<${t}>) -> ${T} {
    %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<${COLS}x${t}>) -> ${T}
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<${t}>) -> ${C}
    %0 = stablehlo.multiply %x, %rb : ${T}
    %1 = stablehlo.tanh %0 : ${T}
    %2 = stablehlo.exponential %1 : ${T}
    %3 = stablehlo.abs %c : ${C}
    %4 = stablehlo.add %3, %sb : ${C}
    %5 = stablehlo.rsqrt %4 : ${C}
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (${C}) -> ${T}
    %7 = stablehlo.multiply %2, %6 : ${T}
    %8 = stablehlo.logistic %y : ${T}
    %9 = stablehlo.subtract %7, %8 : ${T}
    %10 = stablehlo.log %9 : ${T}
    return %10 : ${T}
  }`;
}

function run(text: string, args: NDArray[], fuse: boolean, simd: boolean): NDArray {
  setFusedSimdDisabled(!simd);
  const f = new Program(parseModule(text), { fuse }).func("main");
  return (f.invoke(args, { arena: new Arena({ pool: true }), failures: [] }) as NDArray[])[0] as NDArray;
}

/**
 * The bytes of the result; an f32 NaN as one value (the JavaScript loop stores a NaN with the
 * sign the JIT tier gave it, as fast-paths.test.ts explains; f16 / bf16 encoders canonicalise).
 */
const bytes = (a: NDArray) => {
  if (a.data instanceof Float32Array) {
    const u = new Uint32Array(a.data.buffer, a.data.byteOffset, a.data.length);
    return Array.from(a.data, (x, i) => (Number.isNaN(x) ? -1 : (u[i] as number)));
  }
  return Array.from(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
};

describe("fused loops in WebAssembly SIMD", () => {
  afterAll(() => setFusedSimdDisabled(false));
  for (const t of ["bf16", "f16", "f32"]) {
    test(`${t}: the same bytes as the JavaScript loop and the unfused ops`, () => {
      for (const text of [chain(t), stagedChain(t), slicedTree(t, ROWS, COLS)])
        for (let seed = 1; seed <= 6; seed++) {
          const args = [
            { ...randomBits(t, ROWS * COLS, seed), shape: [ROWS, COLS] },
            { ...randomBits(t, ROWS * COLS, seed + 100), shape: [ROWS, COLS] },
            { ...randomBits(t, COLS, seed + 200), shape: [COLS] },
            { ...randomBits(t, ROWS, seed + 300), shape: [ROWS] },
            { ...randomBits(t, 1, seed + 400), shape: [] },
          ];
          const before = fusedSimdRuns();
          const simd = run(text, args, true, true);
          expect(fusedSimdRuns()).toBeGreaterThan(before);
          const loop = run(text, args, true, false);
          const plain = run(text, args, false, false);
          expect(bytes(simd)).toEqual(bytes(loop));
          expect(bytes(simd)).toEqual(bytes(plain));
        }
    });
  }

  test("rows the loop covers four vectors at a time, one at a time, or both, end to end", () => {
    // 16 and 32 end where a four-vector pass does; 17, 20 and 35 leave a remainder; 3 and 7
    // are shorter than a pass; the bits equal the JavaScript loop's on every row length.
    for (const cols of [3, 7, 16, 17, 20, 32, 35]) {
      const T = `tensor<64x${cols}xf32>`;
      // The per-column leaf keeps the rows apart (without it the loop sees one long row).
      const text = `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${cols}xf32>) -> ${T} {
        %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<${cols}xf32>) -> ${T}
        %x1 = stablehlo.multiply %x, %rb : ${T}
        %0 = stablehlo.tanh %x1 : ${T}
        %1 = stablehlo.exponential %y : ${T}
        %2 = stablehlo.logistic %x : ${T}
        %3 = stablehlo.multiply %0, %1 : ${T}
        %4 = stablehlo.add %3, %2 : ${T}
        return %4 : ${T}
      }`;
      const args = [
        { ...randomBits("f32", 64 * cols, cols), shape: [64, cols] },
        { ...randomBits("f32", 64 * cols, cols + 50), shape: [64, cols] },
        { ...randomBits("f32", cols, cols + 90), shape: [cols] },
      ];
      const before = fusedSimdRuns();
      const simd = run(text, args, true, true);
      expect(fusedSimdRuns()).toBeGreaterThan(before);
      expect(bytes(simd)).toEqual(bytes(run(text, args, true, false)));
    }
  });

  test("every f16 and bf16 value widens, and every value and midpoint rounds, as the JavaScript loop does", () => {
    // f32 inputs converted to each narrow type: every 16-bit pattern, its midpoints to the next
    // one, and values a quarter step either side.
    const n = 65536 * 4;
    const data = new Float32Array(n);
    const view = new Uint32Array(data.buffer);
    for (let h = 0; h < 65536; h++) {
      view[4 * h] = h << 16;
      view[4 * h + 1] = (h << 16) | 0x8000;
      view[4 * h + 2] = (h << 16) | 0x4000;
      view[4 * h + 3] = (h << 16) | 0xc000;
    }
    const f16Inputs = new Float32Array(n);
    for (let h = 0; h < n; h++) f16Inputs[h] = (data[h] as number) * 2 ** -16;
    // Every f16 and bf16 pattern widened to f32 (and negated, so an op follows the load).
    for (const t of ["f16", "bf16"]) {
      const all = new Uint16Array(65536).map((_, i) => i);
      const text = `func.func @main(%x: tensor<65536x${t}>) -> tensor<65536xf32> {
        %0 = stablehlo.convert %x : (tensor<65536x${t}>) -> tensor<65536xf32>
        %1 = stablehlo.negate %0 : tensor<65536xf32>
        return %1 : tensor<65536xf32>
      }`;
      const args: NDArray[] = [{ type: t as NDArray["type"], shape: [65536], data: all }];
      expect(bytes(run(text, args, true, true))).toEqual(bytes(run(text, args, true, false)));
    }
    // The edges: f16's largest value and the overflow midpoint, the smallest subnormals and
    // the normal / subnormal boundary, both signs.
    const edges = [65504, 65519.996, 65520, 65536, 2 ** -24, 2 ** -25, 3 * 2 ** -25, 2 ** -14, 2 ** -14 - 2 ** -25];
    const edgeValues = new Float32Array(n);
    edges.forEach((v, i) => {
      edgeValues[2 * i] = v;
      edgeValues[2 * i + 1] = -v;
    });
    for (const [t, values] of [
      ["f16", edgeValues],
      ["bf16", data],
      ["f16", f16Inputs],
      ["f16", data],
    ] as const) {
      const T = `tensor<${n}xf32>`;
      const N = `tensor<${n}x${t}>`;
      const text = `func.func @main(%x: ${T}, %y: ${T}) -> ${N} {
        %0 = stablehlo.add %x, %y : ${T}
        %1 = stablehlo.convert %0 : (${T}) -> ${N}
        %2 = stablehlo.abs %1 : ${N}
        return %2 : ${N}
      }`;
      const zeros = new Float32Array(n);
      const args: NDArray[] = [
        { type: "f32", shape: [n], data: values },
        { type: "f32", shape: [n], data: zeros },
      ];
      expect(bytes(run(text, args, true, true))).toEqual(bytes(run(text, args, true, false)));
    }
  });
});

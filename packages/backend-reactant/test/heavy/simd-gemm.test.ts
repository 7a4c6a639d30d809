import { afterEach, describe, expect, test } from "bun:test";
import {
  type GemmShape,
  fallbackGemm,
  gemm,
  planGemm,
  setForceFallbackGemm,
  setSimdGemmDisabled,
  simdGemmAvailable,
} from "../../src/blas/index.ts";
import { simdGemmKernel } from "../../src/blas/simd-gemm.ts";
import { compileSmallGemm } from "../../src/blas/small-gemm-codegen.ts";
import { randomFloats, rng } from "./helpers.ts";

type Floats = Float32Array | Float64Array;

/** Random values in [-2, 2), with special values (NaN, infinities...) mixed in unless `finite`. */
const filled = (next: () => number, count: number, f32: boolean, finite = false): Floats =>
  randomFloats(next, count, f32, finite ? 0 : 0.05);

/** The stored bytes, NaN payloads included. */
function bits(x: Floats): Uint8Array {
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength).slice();
}

/** The storage an operand of `rows` x `cols` with leading dimension `ld` needs past `offset`. */
const span = (rows: number, cols: number, ld: number) => (rows - 1) * ld + cols;

interface Case extends GemmShape {
  readonly aOffset: number;
  readonly bOffset: number;
  readonly cOffset: number;
}

function cases(): Case[] {
  const out: Case[] = [];
  // Edge sizes (k = 1, n = 1, m = 1), widths around the 4-lane vectors and the 4-vector
  // blocks (f32: 4, 16; f64: 2, 8), and the matrix-vector layer of the example MLP.
  const sizes: [number, number, number][] = [
    [1, 1, 1],
    [1, 10, 256],
    [1, 1, 300],
    [5, 1, 7],
    [3, 5, 1],
    [2, 3, 4],
    [4, 6, 3],
    [1, 16, 8],
    [1, 17, 9],
    [2, 27, 30],
    [7, 13, 11],
    [4, 33, 2],
  ];
  for (const [m, n, k] of sizes)
    for (const transA of [false, true])
      for (const transB of [false, true])
        for (const padded of [false, true]) {
          const extra = padded ? 3 : 0;
          out.push({
            m,
            n,
            k,
            transA,
            transB,
            lda: (transA ? m : k) + extra,
            ldb: (transB ? k : n) + extra,
            ldc: n + extra,
            aOffset: padded ? 5 : 0,
            bOffset: padded ? 2 : 0,
            cOffset: padded ? 1 : 0,
          });
        }
  return out;
}

afterEach(() => {
  setSimdGemmDisabled(false);
  setForceFallbackGemm(false);
});

describe("WebAssembly SIMD small GEMM", () => {
  test.skipIf(!simdGemmAvailable())("gives the JavaScript loop's bits for every layout, NaN included", () => {
    const next = rng(77);
    for (const f32 of [true, false]) {
      for (const c of cases()) {
        const a = filled(next, c.aOffset + span(c.transA ? c.k : c.m, c.transA ? c.m : c.k, c.lda), f32);
        const b = filled(next, c.bOffset + span(c.transB ? c.n : c.k, c.transB ? c.k : c.n, c.ldb), f32);
        const size = c.cOffset + span(c.m, c.n, c.ldc) + 2;
        // C starts as a pattern so elements outside op(A)op(B) (padding) must stay as they were.
        const viaLoop = filled(rng(5), size, f32);
        const viaSimd = filled(rng(5), size, f32);
        compileSmallGemm(c, f32)(a, c.aOffset, b, c.bOffset, viaLoop, c.cOffset);
        const kernel = simdGemmKernel(c, f32);
        expect(kernel).not.toBeNull();
        kernel?.(a, c.aOffset, b, c.bOffset, viaSimd, c.cOffset);
        const label = `${f32 ? "f32" : "f64"} ${JSON.stringify(c)}`;
        expect({ label, bits: bits(viaSimd) }).toEqual({ label, bits: bits(viaLoop) });
      }
    }
  });

  test.skipIf(!simdGemmAvailable())("stores NaN as the canonical quiet NaN", () => {
    const shape = { m: 1, n: 5, k: 2, lda: 2, ldb: 5, ldc: 5, transA: false, transB: false };
    const a32 = new Float32Array([Number.POSITIVE_INFINITY, 1]);
    // inf * 0 is NaN in column 0; a negative-signed NaN operand in column 1.
    const negNaN = new Float32Array(new Uint32Array([0xffc00001]).buffer)[0] as number;
    const b32 = new Float32Array([0, negNaN, 1, 2, 3, 1, 1, 1, 1, 1]);
    const c32 = new Float32Array(5);
    simdGemmKernel(shape, true)?.(a32, 0, b32, 0, c32, 0);
    const words = new Uint32Array(c32.buffer);
    expect(words[0]).toBe(0x7fc00000);
    expect(words[1]).toBe(0x7fc00000);
    expect(c32[2]).toBe(Number.POSITIVE_INFINITY);
    const c64 = new Float64Array(5);
    simdGemmKernel(shape, false)?.(Float64Array.from(a32), 0, Float64Array.from(b32), 0, c64, 0);
    const doubles = new BigUint64Array(c64.buffer);
    expect(doubles[0]).toBe(0x7ff8000000000000n);
    expect(doubles[1]).toBe(0x7ff8000000000000n);
  });

  test.skipIf(!simdGemmAvailable())(
    "repeated runs give the same bytes, also after another plan grows the memory",
    () => {
      const next = rng(9);
      const shape = { m: 1, n: 10, k: 256, lda: 256, ldb: 256, ldc: 10, transA: false, transB: true };
      const a = filled(next, 256, true);
      const b = filled(next, 2560, true);
      const run = planGemm(shape, true);
      const first = new Float32Array(10);
      run(a, 0, b, 0, first, 0);
      // A plan needing far more of the module's memory than the first.
      const big = { m: 8, n: 1024, k: 1, lda: 1, ldb: 1024, ldc: 1024, transA: false, transB: false };
      planGemm(big, true)(filled(next, 8, true), 0, filled(next, 1024, true), 0, new Float32Array(8192), 0);
      for (let i = 0; i < 5; i++) {
        const again = new Float32Array(10);
        run(a, 0, b, 0, again, 0);
        expect(bits(again)).toEqual(bits(first));
      }
    },
  );

  test("planned GEMMs give the same bits with the WebAssembly path on and off", () => {
    const next = rng(12);
    for (const f32 of [true, false]) {
      for (const c of cases()) {
        const a = filled(next, c.aOffset + span(c.transA ? c.k : c.m, c.transA ? c.m : c.k, c.lda), f32);
        const b = filled(next, c.bOffset + span(c.transB ? c.n : c.k, c.transB ? c.k : c.n, c.ldb), f32);
        const size = c.cOffset + span(c.m, c.n, c.ldc);
        const on = f32 ? new Float32Array(size) : new Float64Array(size);
        const off = f32 ? new Float32Array(size) : new Float64Array(size);
        planGemm(c, f32)(a, c.aOffset, b, c.bOffset, on, c.cOffset);
        setSimdGemmDisabled(true);
        planGemm(c, f32)(a, c.aOffset, b, c.bOffset, off, c.cOffset);
        setSimdGemmDisabled(false);
        expect(bits(on)).toEqual(bits(off));
      }
    }
  });
});

describe("planned library GEMM", () => {
  test("gives gemm's bits for sizes above the small loop, with offsets and transposes", () => {
    const next = rng(31);
    for (const f32 of [true, false]) {
      for (const [m, n, k] of [
        [1, 256, 64],
        [1, 1, 9000],
        [8, 256, 256],
        [3, 50, 70],
      ] as [number, number, number][]) {
        for (const transA of [false, true]) {
          for (const transB of [false, true]) {
            const shape = { m, n, k, transA, transB, lda: transA ? m : k, ldb: transB ? k : n, ldc: n };
            // Finite operands: the TypeScript fallback leaves a NaN's sign to the JIT.
            const a = filled(next, m * k + 3, f32, true);
            const b = filled(next, k * n + 1, f32, true);
            const call = { ...shape, a, aOffset: 3, b, bOffset: 1, cOffset: 2, accumulate: false };
            const viaGemm = f32 ? new Float32Array(m * n + 2) : new Float64Array(m * n + 2);
            gemm({ ...call, c: viaGemm });
            const run = planGemm(shape, f32);
            for (let rep = 0; rep < 2; rep++) {
              const planned = f32 ? new Float32Array(m * n + 2) : new Float64Array(m * n + 2);
              run(a, 3, b, 1, planned, 2);
              expect(bits(planned)).toEqual(bits(viaGemm));
            }
            // The forced fallback reaches planned calls too.
            setForceFallbackGemm(true);
            const viaFallback = f32 ? new Float32Array(m * n + 2) : new Float64Array(m * n + 2);
            fallbackGemm({ ...call, c: viaFallback });
            const forced = f32 ? new Float32Array(m * n + 2) : new Float64Array(m * n + 2);
            run(a, 3, b, 1, forced, 2);
            setForceFallbackGemm(false);
            expect(bits(forced)).toEqual(bits(viaFallback));
          }
        }
      }
    }
  });

  test("still refuses operands that do not fit", () => {
    const run = planGemm({ m: 1, n: 256, k: 64, lda: 64, ldb: 256, ldc: 256, transA: false, transB: false }, true);
    expect(() => run(new Float32Array(64), 0, new Float32Array(100), 0, new Float32Array(256), 0)).toThrow(/exceeds/);
    expect(() => run(new Float32Array(64), 1, new Float32Array(64 * 256), 0, new Float32Array(256), 0)).toThrow(
      /exceeds/,
    );
  });
});

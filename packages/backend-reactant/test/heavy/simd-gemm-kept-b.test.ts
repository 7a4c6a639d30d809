import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import { simdGemmAvailable } from "../../src/blas/index.ts";
import { simdGemmKernel } from "../../src/blas/simd-gemm.ts";
import { compileSmallGemm } from "../../src/blas/small-gemm-codegen.ts";
import type { NDArray } from "../../src/array.ts";
import { Arena } from "../../src/plan/arena.ts";
import { Program } from "../../src/plan/program.ts";
import { randomFloats, rng } from "./helpers.ts";

/**
 * The WebAssembly small GEMM keeps its copy of B while the caller's B is the same array at the
 * same offset and storage version (simd-gemm.ts): the kept copy must be what B held, survive
 * other kernels' calls and memory growth, and be replaced as soon as the version or array moves.
 */
type Floats = Float32Array | Float64Array;
const bits = (x: Floats) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength).slice();

describe("kept B of the WebAssembly small GEMM", () => {
  test.skipIf(!simdGemmAvailable())("interleaved kernels with kept and copied B give the loop's bits", () => {
    const next = rng(41);
    const shapes = [
      { m: 1, n: 256, k: 16, lda: 16, ldb: 256, ldc: 256, transA: false, transB: false },
      { m: 2, n: 7, k: 9, lda: 9, ldb: 9, ldc: 7, transA: false, transB: true },
      { m: 3, n: 5, k: 4, lda: 3, ldb: 5, ldc: 5, transA: true, transB: false },
    ];
    for (const f32 of [true, false]) {
      const kernels = shapes.map((s) => simdGemmKernel(s, f32));
      const loops = shapes.map((s) => compileSmallGemm(s, f32));
      const bs = shapes.map((s) => randomFloats(next, s.k * s.n + 2, f32, 0.05));
      for (let round = 0; round < 6; round++) {
        shapes.forEach((s, i) => {
          const a = randomFloats(next, s.m * s.k + 1, f32, 0.05);
          const want = f32 ? new Float32Array(s.m * s.n) : new Float64Array(s.m * s.n);
          const got = f32 ? new Float32Array(s.m * s.n) : new Float64Array(s.m * s.n);
          const b = bs[i] as Floats;
          loops[i]?.(a, 1, b, 2, want, 0);
          // Kernel 1 is never given a version: it copies B on every call, over the scratch the others use.
          kernels[i]?.(a, 1, b, 2, got, 0, i === 1 ? undefined : 3);
          expect(bits(got)).toEqual(bits(want));
        });
        // A kernel of a large shape grows the memory between rounds.
        if (round === 2) {
          const big = { m: 8, n: 1024, k: 1, lda: 1, ldb: 1024, ldc: 1024, transA: false, transB: false };
          const c = f32 ? new Float32Array(8192) : new Float64Array(8192);
          simdGemmKernel(big, f32)?.(randomFloats(next, 8, f32, 0), 0, randomFloats(next, 1024, f32, 0), 0, c, 0, 1);
        }
      }
    }
  });

  test.skipIf(!simdGemmAvailable())("B is copied again when its version, array or offset changes", () => {
    const shape = { m: 1, n: 4, k: 2, lda: 2, ldb: 4, ldc: 4, transA: false, transB: false };
    const kernel = simdGemmKernel(shape, true);
    const a = Float32Array.of(1, 10);
    const b = Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0);
    const run = (bOffset: number, version: number, from = b) => {
      const c = new Float32Array(4);
      kernel?.(a, 0, from, bOffset, c, 0, version);
      return Array.from(c);
    };
    expect(run(0, 1)).toEqual([51, 62, 73, 84]);
    // Same array, offset and version: the kept copy is what is read, whatever B holds now.
    b[0] = 100;
    expect(run(0, 1)).toEqual([51, 62, 73, 84]);
    expect(run(0, 2)).toEqual([150, 62, 73, 84]);
    expect(run(4, 2)).toEqual([5, 6, 7, 8]);
    expect(run(4, 2, Float32Array.of(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1))).toEqual([12, 12, 12, 12]);
  });

  test("a loop's carried weights updated in place are read anew by the next iteration's dot", () => {
    // Each iteration: y += x . W, then row i of W is set to 1s in place (W dies there, so the
    // update writes its storage and bumps its version). The dot must see the updated rows.
    const text = `func.func @main(%w0: tensor<4x8xf32>, %x: tensor<1x4xf32>) -> tensor<1x8xf32> {
      %zero = stablehlo.constant dense<0> : tensor<i32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.constant dense<4> : tensor<i32>
      %ones = stablehlo.constant dense<1.0> : tensor<1x8xf32>
      %y0 = stablehlo.constant dense<0.0> : tensor<1x8xf32>
      %w = stablehlo.add %w0, %w0 : tensor<4x8xf32>
      %r:3 = stablehlo.while(%i = %zero, %wi = %w, %y = %y0) : tensor<i32>, tensor<4x8xf32>, tensor<1x8xf32>
      cond {
        %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %d = stablehlo.dot_general %x, %wi, contracting_dims = [1] x [0] : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
        %y2 = stablehlo.add %y, %d : tensor<1x8xf32>
        %w2 = stablehlo.dynamic_update_slice %wi, %ones, %i, %zero : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
        %i2 = stablehlo.add %i, %one : tensor<i32>
        stablehlo.return %i2, %w2, %y2 : tensor<i32>, tensor<4x8xf32>, tensor<1x8xf32>
      }
      return %r#2 : tensor<1x8xf32>
    }`;
    const program = new Program(parseModule(text, "w.mlir"));
    const arena = new Arena({ pool: true });
    const w0 = Float32Array.from({ length: 32 }, (_, j) => (j % 8) + 8 * Math.floor(j / 8));
    const x = Float32Array.of(1, 2, 3, 4);
    // By hand: iteration i reads W with rows < i set to 1 and the others doubled.
    const want = new Array(8).fill(0);
    for (let i = 0; i < 4; i++)
      for (let col = 0; col < 8; col++)
        for (let r = 0; r < 4; r++) want[col] += (x[r] as number) * (r < i ? 1 : 2 * (w0[r * 8 + col] as number));
    for (let run = 0; run < 3; run++) {
      const [y] = program.func("main").invoke(
        [
          { type: "f32", shape: [4, 8], data: w0 },
          { type: "f32", shape: [1, 4], data: x },
        ],
        { arena, failures: [] },
      ) as NDArray[];
      expect(Array.from(y?.data as Float32Array)).toEqual(want);
      arena.release(y?.data as Float32Array);
      arena.flush();
    }
  });
});

import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray } from "../src/array.ts";
import { maxFloat, minFloat, relu } from "../src/elem/branchless.ts";
import { createReactantBackend } from "../src/index.ts";
import { poolNhwc } from "../src/kernels/heavy/pool-nhwc.ts";
import { windowGeometry } from "../src/kernels/heavy/window-geometry.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

const SPECIAL = [0, -0, 1, -1, 0.5, -2.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, 3e38, 1e-45];

/** Inputs with NaN, infinities and both zeros among random values. */
function awkward(n: number, seed = 1): Float32Array {
  let s = seed;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = i % 13 === 0 ? (SPECIAL[(s >>> 8) % SPECIAL.length] as number) : s / 2 ** 32 - 0.5;
  }
  return out;
}

/**
 * Bits of each f32 element, with every NaN written as one value: a NaN's sign depends on where
 * it was made (x86 makes negative ones, JavaScriptCore's interpreter tiers canonicalise), in
 * XLA too, so it is not part of the results compared.
 */
const bits = (a: NDArray) =>
  Array.from(a.data as Float32Array, (x, i) =>
    Number.isNaN(x) ? -1 : new Uint32Array(a.data.buffer, a.data.byteOffset, a.data.length)[i],
  );

describe("branch-free max / min", () => {
  test("equal Math.max / Math.min on every pair of special values, signs of zero included", () => {
    for (const a of SPECIAL) {
      expect(Object.is(relu(a), Math.max(a, 0))).toBe(true);
      for (const b of SPECIAL) {
        expect(Object.is(maxFloat(a, b), Math.max(a, b))).toBe(true);
        expect(Object.is(minFloat(a, b), Math.min(a, b))).toBe(true);
      }
    }
  });
});

describe("fused loop layouts", () => {
  const run = (text: string, args: NDArray[], fuse: boolean) => {
    const program = new Program(parseModule(text), { fuse });
    const f = program.func("main");
    return { out: f.invoke(args, { arena: new Arena({ pool: true }), failures: [] }) as NDArray[], f };
  };

  test("per-channel batch norm + ReLU on NHWC and a per-row statistic give the unfused bytes", () => {
    // Over 4096 elements, so the zero broadcast is not folded and the ReLU reads a literal 0.
    const T = "tensor<1x16x16x32xf32>";
    const text = `func.func @main(%x: ${T}, %m: tensor<32xf32>, %s: tensor<32xf32>, %r: tensor<1x16x16xf32>) -> ${T} {
      %0 = stablehlo.broadcast_in_dim %m, dims = [3] : (tensor<32xf32>) -> tensor<1x1x1x32xf32>
      %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x1x1x32xf32>) -> ${T}
      %2 = stablehlo.subtract %x, %1 : ${T}
      %3 = stablehlo.broadcast_in_dim %s, dims = [3] : (tensor<32xf32>) -> ${T}
      %4 = stablehlo.multiply %2, %3 : ${T}
      %5 = stablehlo.broadcast_in_dim %r, dims = [0, 1, 2] : (tensor<1x16x16xf32>) -> ${T}
      %6 = stablehlo.add %4, %5 : ${T}
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> ${T}
      %8 = stablehlo.maximum %6, %7 : ${T}
      return %8 : ${T}
    }`;
    const args: NDArray[] = [
      { type: "f32", shape: [1, 16, 16, 32], data: awkward(8192) },
      { type: "f32", shape: [32], data: awkward(32, 2) },
      { type: "f32", shape: [32], data: awkward(32, 3) },
      { type: "f32", shape: [1, 16, 16], data: awkward(256, 4) },
    ];
    const fused = run(text, args, true);
    const plain = run(text, args, false);
    // Both broadcasts of %m and the three element-wise ops and the ReLU are one step.
    expect(fused.f.body.steps.length).toBe(1);
    expect(bits(fused.out[0] as NDArray)).toEqual(bits(plain.out[0] as NDArray));
    // A second run reuses pooled buffers and still gives the same bytes.
    const again = fused.f.invoke(args, { arena: new Arena({ pool: true }), failures: [] }) as NDArray[];
    expect(bits(again[0] as NDArray)).toEqual(bits(plain.out[0] as NDArray));
  });
});

describe("NHWC pooling fast path", () => {
  test("3x3/2 and dilated windows match a direct loop, NaN and signed zeros included", () => {
    const [N, H, W, C] = [2, 9, 7, 5];
    const data = awkward(N * H * W * C, 7);
    for (const attrs of [
      {
        windowDimensions: [1, 3, 3, 1],
        windowStrides: [1, 2, 2, 1],
        padding: [
          [0, 0],
          [1, 1],
          [1, 1],
          [0, 0],
        ] as [number, number][],
      },
      {
        windowDimensions: [1, 2, 3, 1],
        windowStrides: [1, 1, 2, 1],
        windowDilations: [1, 2, 1, 1],
        padding: [
          [0, 0],
          [0, 1],
          [2, 0],
          [0, 0],
        ] as [number, number][],
      },
    ]) {
      for (const kind of ["max", "min"] as const) {
        const g = windowGeometry("reduce_window", [N, H, W, C], attrs);
        const [, OH, OW] = g.outShape as [number, number, number];
        const init = kind === "max" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
        const out = new Float32Array(N * OH * OW * C).fill(init);
        expect(poolNhwc(g, data, out, kind)).toBe(true);
        const ref = new Float32Array(out.length).fill(init);
        const [kH, kW] = [g.window[1] as number, g.window[2] as number];
        let o = 0;
        for (let n = 0; n < N; n++)
          for (let oh = 0; oh < OH; oh++)
            for (let ow = 0; ow < OW; ow++)
              for (let c = 0; c < C; c++, o++)
                for (let kh = 0; kh < kH; kh++)
                  for (let kw = 0; kw < kW; kw++) {
                    const ih = g.tables[1]?.[oh * kH + kh] as number;
                    const iw = g.tables[2]?.[ow * kW + kw] as number;
                    if (ih < 0 || iw < 0) continue;
                    const v = data[((n * H + ih) * W + iw) * C + c] as number;
                    ref[o] = kind === "max" ? Math.max(ref[o] as number, v) : Math.min(ref[o] as number, v);
                  }
        const asArray = (d: Float32Array): NDArray => ({ type: "f32", shape: [d.length], data: d });
        expect(bits(asArray(out))).toEqual(bits(asArray(ref)));
      }
    }
  });
});

describe("buffer pool", () => {
  test("outputs of one run stay intact through later runs; a disposed buffer cannot be read", async () => {
    const backend = createReactantBackend();
    const text = `func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %0 = stablehlo.multiply %a, %a : tensor<64x64xf32>
      %1 = stablehlo.exponential %0 : tensor<64x64xf32>
      %2 = stablehlo.dot_general %1, %a, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %3 = stablehlo.add %2, %a : tensor<64x64xf32>
      return %3 : tensor<64x64xf32>
    }`;
    const exe = await backend.compile({ bytes: new TextEncoder().encode(text), format: "text" }, {});
    const input = (v: number) =>
      backend.upload({ dtype: "f32", shape: [64, 64], data: new Float32Array(4096).map((_, i) => ((i % 7) - v) / 8) });
    const [a, b] = [await input(1), await input(3)];
    const [first] = await backend.execute(exe, [a]);
    const expected = (await backend.download(first as never)).data.slice();
    for (let i = 0; i < 3; i++) for (const o of await backend.execute(exe, [b])) o.dispose();
    expect((await backend.download(first as never)).data).toEqual(expected);
    first?.dispose();
    for (const o of await backend.execute(exe, [b])) o.dispose();
    try {
      await backend.download(first as never);
      throw new Error("expected DISPOSED");
    } catch (e) {
      expect(isXlaserveError(e) && e.code === "DISPOSED").toBe(true);
    }
    await backend.dispose();
  });

  test("f16 and bf16 channels-last pooling equals Math.max / Math.min over the decoded taps", () => {
    const [N, H, W, C] = [2, 7, 6, 5];
    const attrs = {
      windowDimensions: [1, 3, 2, 1],
      windowStrides: [1, 2, 2, 1],
      padding: [
        [0, 0],
        [1, 1],
        [0, 1],
        [0, 0],
      ] as [number, number][],
    };
    const g = windowGeometry("reduce_window", [N, H, W, C], attrs);
    const [, OH, OW] = g.outShape as [number, number, number];
    const [kH, kW] = [g.window[1] as number, g.window[2] as number];
    for (const [type, table, inf, nan] of [
      ["bf16", BF16_TO_NUMBER, 0x7f80, 0x7fc1],
      ["f16", F16_TO_NUMBER, 0x7c00, 0x7e01],
    ] as const) {
      // Random bits with both zeros, both infinities and NaNs of both signs among them.
      const special = [0, 0x8000, inf, inf | 0x8000, nan, nan | 0x8000];
      let s = 5;
      const data = new Uint16Array(N * H * W * C);
      for (let i = 0; i < data.length; i++) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        data[i] = i % 11 === 0 ? (special[(s >>> 8) % special.length] as number) : s >>> 16;
      }
      for (const kind of ["max", "min"] as const) {
        const init = kind === "max" ? inf | 0x8000 : inf;
        const out = new Uint16Array(N * OH * OW * C).fill(init);
        expect(poolNhwc(g, data, out, kind, type)).toBe(true);
        let o = 0;
        for (let n = 0; n < N; n++)
          for (let oh = 0; oh < OH; oh++)
            for (let ow = 0; ow < OW; ow++)
              for (let c = 0; c < C; c++, o++) {
                let ref = table[init] as number;
                for (let kh = 0; kh < kH; kh++)
                  for (let kw = 0; kw < kW; kw++) {
                    const ih = g.tables[1]?.[oh * kH + kh] as number;
                    const iw = g.tables[2]?.[ow * kW + kw] as number;
                    if (ih < 0 || iw < 0) continue;
                    const v = table[data[((n * H + ih) * W + iw) * C + c] as number] as number;
                    ref = kind === "max" ? Math.max(ref, v) : Math.min(ref, v);
                  }
                const got = table[out[o] as number] as number;
                if (Number.isNaN(ref)) expect(got).toBeNaN();
                else expect(Object.is(got, ref)).toBe(true);
              }
      }
    }
  });
});

import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray } from "../../src/array.ts";
import { setForceFallbackGemm } from "../../src/blas/index.ts";
import { type ConvAttributes, type ConvDimensionNumbers, convolution } from "../../src/kernels/heavy/index.ts";
import { NHWC_HWIO, symmetricPadding2d } from "./conv-layouts.ts";
import { naiveConvolution } from "./conv-oracle.ts";
import { array, expectClose, randInt, randomF32, rng, shuffle } from "./helpers.ts";

/** Random layouts: every role gets a random axis, as any exporter may choose. */
function randomDims(next: () => number, spatialRank: number): ConvDimensionNumbers {
  const axes = (n: number) => shuffle(next, [...Array(n).keys()]);
  const [ib, iff, ...is] = axes(spatialRank + 2) as [number, number, ...number[]];
  const [ki, ko, ...ks] = axes(spatialRank + 2) as [number, number, ...number[]];
  const [ob, of, ...os] = axes(spatialRank + 2) as [number, number, ...number[]];
  return {
    inputBatch: ib,
    inputFeature: iff,
    inputSpatial: is,
    kernelInputFeature: ki,
    kernelOutputFeature: ko,
    kernelSpatial: ks,
    outputBatch: ob,
    outputFeature: of,
    outputSpatial: os,
  };
}

function shapeFor(roles: [number, number][], rank: number): number[] {
  const shape = new Array<number>(rank).fill(0);
  for (const [axis, size] of roles) shape[axis] = size;
  return shape;
}

function randomCase(seed: number): { lhs: NDArray; rhs: NDArray; attrs: ConvAttributes } {
  const next = rng(seed);
  const spatialRank = randInt(next, 1, 3);
  const dims = randomDims(next, spatialRank);
  const featureGroups = next() < 0.3 ? randInt(next, 2, 3) : 1;
  const batchGroups = featureGroups === 1 && next() < 0.25 ? 2 : 1;
  const groups = featureGroups * batchGroups;
  const batch = randInt(next, 1, 2) * batchGroups;
  const groupIn = randInt(next, 1, 3);
  const outChannels = randInt(next, 1, 3) * groups;
  const inSpatial = Array.from({ length: spatialRank }, () => randInt(next, 1, spatialRank === 3 ? 5 : 7));
  const kernelSpatial = Array.from({ length: spatialRank }, () => randInt(next, 1, 3));
  const rank = spatialRank + 2;
  const lhsShape = shapeFor(
    [
      [dims.inputBatch, batch],
      [dims.inputFeature, groupIn * featureGroups],
      ...dims.inputSpatial.map((a, i) => [a, inSpatial[i]] as [number, number]),
    ],
    rank,
  );
  const rhsShape = shapeFor(
    [
      [dims.kernelInputFeature, groupIn],
      [dims.kernelOutputFeature, outChannels],
      ...dims.kernelSpatial.map((a, i) => [a, kernelSpatial[i]] as [number, number]),
    ],
    rank,
  );
  const attrs: ConvAttributes = {
    dims,
    windowStrides: inSpatial.map(() => randInt(next, 1, 3)),
    padding: inSpatial.map(() => [randInt(next, -1, 2), randInt(next, -1, 2)] as [number, number]),
    lhsDilation: inSpatial.map(() => randInt(next, 1, 2)),
    rhsDilation: inSpatial.map(() => randInt(next, 1, 2)),
    windowReversal: inSpatial.map(() => next() < 0.3),
    featureGroupCount: featureGroups,
    batchGroupCount: batchGroups,
  };
  return { lhs: randomF32(next, lhsShape), rhs: randomF32(next, rhsShape), attrs };
}

describe("convolution", () => {
  test("matches the naive spec oracle on 150 random layouts and windows", () => {
    for (let seed = 1; seed <= 150; seed++) {
      const { lhs, rhs, attrs } = randomCase(seed);
      const expected = naiveConvolution(lhs, rhs, attrs);
      const actual = convolution(lhs, rhs, attrs);
      expect(actual.shape).toEqual(expected.shape);
      try {
        expectClose(actual.data as Float32Array, expected.data, 1e-5);
      } catch (error) {
        throw new Error(`seed ${seed} ${JSON.stringify(attrs)}: ${(error as Error).message}`);
      }
    }
  });

  test("the TypeScript GEMM fallback gives the same results as OpenBLAS on a layer-sized convolution", () => {
    const next = rng(5);
    // 1x14x14x16 3x3 -> 24: a 196 x 144 x 24 GEMM, above the small-product loop.
    const lhs = randomF32(next, [1, 14, 14, 16]);
    const rhs = randomF32(next, [3, 3, 16, 24]);
    const attrs: ConvAttributes = { dims: NHWC_HWIO, padding: symmetricPadding2d(1) };
    const withBlas = convolution(lhs, rhs, attrs);
    setForceFallbackGemm(true);
    try {
      expectClose(convolution(lhs, rhs, attrs).data as Float32Array, withBlas.data as Float32Array, 1e-5);
    } finally {
      setForceFallbackGemm(false);
    }
    expectClose(withBlas.data as Float32Array, naiveConvolution(lhs, rhs, attrs).data, 1e-5);
  });

  test("depthwise (one input channel per group): multipliers, windows and layouts against the oracle", () => {
    const next = rng(11);
    for (let seed = 0; seed < 40; seed++) {
      const channels = randInt(next, 2, 9);
      const multiplier = randInt(next, 1, 3);
      const batch = randInt(next, 1, 3);
      const [h, w] = [randInt(next, 1, 9), randInt(next, 1, 9)];
      const [kh, kw] = [randInt(next, 1, 3), randInt(next, 1, 3)];
      const attrs: ConvAttributes = {
        dims: seed % 2 === 0 ? NHWC_HWIO : randomDims(next, 2),
        windowStrides: [randInt(next, 1, 2), randInt(next, 1, 2)],
        padding: [
          [randInt(next, -1, 2), randInt(next, 0, 2)],
          [randInt(next, 0, 2), randInt(next, -1, 2)],
        ],
        lhsDilation: [randInt(next, 1, 2), 1],
        rhsDilation: [1, randInt(next, 1, 2)],
        windowReversal: [next() < 0.3, next() < 0.3],
        featureGroupCount: channels,
      };
      const d = attrs.dims;
      const lhsShape = shapeFor(
        [
          [d.inputBatch, batch],
          [d.inputFeature, channels],
          [d.inputSpatial[0] as number, h],
          [d.inputSpatial[1] as number, w],
        ],
        4,
      );
      const rhsShape = shapeFor(
        [
          [d.kernelInputFeature, 1],
          [d.kernelOutputFeature, channels * multiplier],
          [d.kernelSpatial[0] as number, kh],
          [d.kernelSpatial[1] as number, kw],
        ],
        4,
      );
      const lhs = randomF32(next, lhsShape);
      const rhs = randomF32(next, rhsShape);
      const expected = naiveConvolution(lhs, rhs, attrs);
      const actual = convolution(lhs, rhs, attrs);
      expect(actual.shape).toEqual(expected.shape);
      expectClose(actual.data as Float32Array, expected.data, 1e-6);
    }
  });

  test("ResNet-style NHWC/HWIO: 1x1, 3x3 pad 1, 7x7 stride 2", () => {
    const next = rng(7);
    const cases: [number[], number[], ConvAttributes][] = [
      [[1, 6, 6, 8], [1, 1, 8, 5], { dims: NHWC_HWIO }],
      [[2, 6, 5, 4], [3, 3, 4, 3], { dims: NHWC_HWIO, padding: symmetricPadding2d(1) }],
      [[1, 12, 12, 3], [7, 7, 3, 4], { dims: NHWC_HWIO, windowStrides: [2, 2], padding: symmetricPadding2d(3) }],
      [[1, 8, 8, 4], [1, 1, 4, 6], { dims: NHWC_HWIO, windowStrides: [2, 2] }],
    ];
    for (const [ls, rs, attrs] of cases) {
      const lhs = randomF32(next, ls);
      const rhs = randomF32(next, rs);
      expectClose(convolution(lhs, rhs, attrs).data as Float32Array, naiveConvolution(lhs, rhs, attrs).data, 1e-5);
    }
  });

  test("integer convolution is exact and wraps around", () => {
    const lhs = array("i8", [1, 3, 1], [100, 100, 100]);
    const rhs = array("i8", [2, 1, 1], [2, 1]);
    const dims = {
      ...NHWC_HWIO,
      inputSpatial: [1],
      kernelSpatial: [0],
      outputSpatial: [1],
      kernelInputFeature: 1,
      kernelOutputFeature: 2,
      inputFeature: 2,
      outputFeature: 2,
    };
    const out = convolution(lhs, rhs, { dims });
    // 100*2 + 100*1 = 300 wraps to 44 in i8.
    expect(Array.from(out.data as Int8Array)).toEqual([44, 44]);
  });

  test("complex convolution multiplies as complex numbers", () => {
    const dims = {
      inputBatch: 0,
      inputFeature: 2,
      inputSpatial: [1],
      kernelInputFeature: 1,
      kernelOutputFeature: 2,
      kernelSpatial: [0],
      outputBatch: 0,
      outputFeature: 2,
      outputSpatial: [1],
    };
    const lhs = array("c64", [1, 2, 1], [1, 2, 3, -1]);
    const rhs = array("c64", [1, 1, 1], [0, 1]);
    // (1+2i)i = -2+i, (3-i)i = 1+3i
    expect(Array.from(convolution(lhs, rhs, { dims }).data as Float32Array)).toEqual([-2, 1, 1, 3]);
  });

  test("bad attributes raise a typed error", () => {
    const lhs = randomF32(rng(1), [1, 4, 4, 4]);
    const rhs = randomF32(rng(2), [3, 3, 3, 2]);
    try {
      convolution(lhs, rhs, { dims: NHWC_HWIO });
      throw new Error("expected a failure");
    } catch (error) {
      expect(isXlaserveError(error, "INVALID_ARGUMENT")).toBe(true);
      expect((error as Error).message).toContain("kernel input features");
    }
  });
});

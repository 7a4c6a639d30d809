import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray, RegionInfo, Scalar } from "../../src/array.ts";
import {
  type GatherDimensionNumbers,
  type ScatterDimensionNumbers,
  gather,
  scatter,
} from "../../src/kernels/heavy/index.ts";
import { naiveGather, naiveScatterAdd } from "./gather-scatter-oracle.ts";
import { array, count, randInt, rng, shuffle, region } from "./helpers.ts";

const iota = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const addRegion: RegionInfo = region(([a, b]) => [(a as number) + (b as number)], "add");
const addRegionSlow: RegionInfo = region(addRegion.fn, null);
const replaceRegion: RegionInfo = region((args) => [args[1] as Scalar], null);

/** A random but valid gather/scatter configuration: batching, collapsed and window axes, any index_vector_dim. */
function randomCase(seed: number) {
  const next = rng(seed);
  const rank = randInt(next, 1, 3);
  const operandShape = Array.from({ length: rank }, () => randInt(next, 1, 4));
  const axes = shuffle(next, [...Array(rank).keys()]);
  const nBatching = randInt(next, 0, Math.min(1, rank - 1));
  const batchingAxes = axes.slice(0, nBatching);
  const rest = axes.slice(nBatching);
  const nCollapsed = randInt(next, 0, rest.length);
  const collapsed = rest.slice(0, nCollapsed).sort((a, b) => a - b);
  const mapped = shuffle(next, [...rest])
    .slice(0, randInt(next, 1, rest.length || 1))
    .filter((a) => a !== undefined);
  const startIndexMap = mapped.length > 0 ? mapped : [axes[0] as number];
  const sliceSizes = operandShape.map((size, d) =>
    collapsed.includes(d) || batchingAxes.includes(d) ? 1 : randInt(next, 0, size),
  );
  // Index array: batch dims (one per batching axis first, then extra), vector dim somewhere.
  const extraBatch = Array.from({ length: randInt(next, 0, 2) }, () => randInt(next, 1, 3));
  const batchSizes = [...batchingAxes.map((d) => operandShape[d] as number), ...extraBatch];
  const batchOrder = shuffle(next, [...batchSizes.keys()]);
  const indexBatchShape = batchOrder.map((i) => batchSizes[i] as number);
  const indexVectorDim =
    startIndexMap.length === 1 && next() < 0.3 ? indexBatchShape.length : randInt(next, 0, indexBatchShape.length);
  const indicesShape = [...indexBatchShape];
  if (indexVectorDim < indexBatchShape.length || startIndexMap.length !== 1)
    indicesShape.splice(indexVectorDim, 0, startIndexMap.length);
  const ivd = indicesShape.length === indexBatchShape.length ? indexBatchShape.length : indexVectorDim;
  const batchingIndexAxes = batchingAxes.map((_, i) => {
    const pos = batchOrder.indexOf(i);
    return pos < ivd ? pos : pos + 1;
  });
  const indices = array(
    "i32",
    indicesShape,
    Array.from({ length: count(indicesShape) }, () => randInt(next, -2, 5)),
  );
  const operand = array("i32", operandShape, iota(count(operandShape)));
  return {
    next,
    operand,
    indices,
    sliceSizes,
    collapsed,
    batchingAxes,
    batchingIndexAxes,
    startIndexMap,
    ivd,
    indexBatchShape,
  };
}

describe("gather", () => {
  test("the spec's batching example (interpret/gather.mlir), with an out-of-range index clamped", () => {
    const operand = array("i64", [2, 3, 4, 2], iota(48).map(BigInt));
    const indices = array(
      "i64",
      [2, 2, 3, 2],
      [0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0].map(BigInt),
    );
    const dims: GatherDimensionNumbers = {
      offsetDims: [3, 4],
      collapsedSliceDims: [1],
      operandBatchingDims: [0],
      startIndicesBatchingDims: [1],
      startIndexMap: [2, 1],
      indexVectorDim: 3,
    };
    const out = gather(operand, indices, dims, [1, 1, 2, 2]);
    expect(out.shape).toEqual([2, 2, 3, 2, 2]);
    expect(Array.from(out.data as BigInt64Array, Number)).toEqual([
      1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16, 33, 34, 35, 36, 35, 36, 37, 38, 41, 42, 43, 44, 1, 2, 3, 4, 13, 14, 15,
      16, 21, 22, 23, 24, 43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30,
    ]);
  });

  test("matches the spec formula on 300 random configurations", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const c = randomCase(seed);
      const windowAxes = c.operand.shape
        .map((_, d) => d)
        .filter((d) => !c.collapsed.includes(d) && !c.batchingAxes.includes(d));
      const resultRank = c.indexBatchShape.length + windowAxes.length;
      const offsetDims = shuffle(c.next, [...Array(resultRank).keys()])
        .slice(0, windowAxes.length)
        .sort((a, b) => a - b);
      const dims: GatherDimensionNumbers = {
        offsetDims,
        collapsedSliceDims: c.collapsed,
        operandBatchingDims: c.batchingAxes,
        startIndicesBatchingDims: c.batchingIndexAxes,
        startIndexMap: c.startIndexMap,
        indexVectorDim: c.ivd,
      };
      const out = gather(c.operand, c.indices, dims, c.sliceSizes);
      expect(Array.from(out.data as Int32Array)).toEqual(
        naiveGather(c.operand, c.indices, dims, c.sliceSizes, out.shape),
      );
    }
  });

  test("complex elements move as pairs", () => {
    const operand = array("c64", [3], [1, 10, 2, 20, 3, 30]);
    const out = gather(
      operand,
      array("i32", [2, 1], [2, 0]),
      {
        offsetDims: [],
        collapsedSliceDims: [0],
        operandBatchingDims: [],
        startIndicesBatchingDims: [],
        startIndexMap: [0],
        indexVectorDim: 1,
      },
      [1],
    );
    expect(Array.from(out.data as Float32Array)).toEqual([3, 30, 1, 10]);
  });

  test("a slice larger than the operand is a typed error", () => {
    let caught: unknown;
    try {
      gather(
        array("f32", [3], [1, 2, 3]),
        array("i32", [1], [0]),
        {
          offsetDims: [0],
          collapsedSliceDims: [],
          operandBatchingDims: [],
          startIndicesBatchingDims: [],
          startIndexMap: [0],
          indexVectorDim: 1,
        },
        [4],
      );
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

describe("scatter", () => {
  test("interpret/scatter.mlir: duplicate and out-of-range indices", () => {
    const input = array("i64", [3, 4, 2], iota(24).map(BigInt));
    const indices = array("i64", [2, 3, 2], [0, 2, 1, 0, 2, 1, 0, 1, 1, 0, 0, 9].map(BigInt));
    const updates = array("i64", [2, 3, 2, 2], new Array(24).fill(1n));
    const dims: ScatterDimensionNumbers = {
      updateWindowDims: [2, 3],
      insertedWindowDims: [0],
      inputBatchingDims: [],
      scatterIndicesBatchingDims: [],
      scatterDimsToOperandDims: [1, 0],
      indexVectorDim: 2,
    };
    const [out] = scatter([input], indices, [updates], dims, addRegion);
    expect(Array.from((out as NDArray).data as BigInt64Array, Number)).toEqual([
      1, 2, 5, 6, 7, 8, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 21, 22, 23, 24,
    ]);
    expect(Array.from(input.data as BigInt64Array, Number)).toEqual(iota(24));
  });

  test("interpret/scatter.mlir: batching dimensions", () => {
    const input = array("i64", [2, 3, 4, 2], iota(48).map(BigInt));
    const indices = array(
      "i64",
      [2, 2, 3, 2],
      [0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0].map(BigInt),
    );
    const updates = array("i64", [2, 2, 3, 2, 2], new Array(48).fill(1n));
    const dims: ScatterDimensionNumbers = {
      updateWindowDims: [3, 4],
      insertedWindowDims: [1],
      inputBatchingDims: [0],
      scatterIndicesBatchingDims: [1],
      scatterDimsToOperandDims: [2, 1],
      indexVectorDim: 3,
    };
    const [out] = scatter([input], indices, [updates], dims, addRegionSlow);
    expect(Array.from((out as NDArray).data as BigInt64Array, Number)).toEqual([
      3, 4, 6, 7, 6, 7, 7, 8, 9, 10, 11, 12, 15, 16, 17, 18, 17, 18, 19, 20, 22, 23, 24, 25, 25, 26, 28, 29, 30, 31, 31,
      32, 35, 36, 38, 39, 38, 39, 39, 40, 41, 42, 44, 45, 46, 47, 47, 48,
    ]);
  });

  test("matches the spec formula on 300 random configurations (fast and region paths)", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const c = randomCase(seed);
      const windowAxes = c.operand.shape
        .map((_, d) => d)
        .filter((d) => !c.collapsed.includes(d) && !c.batchingAxes.includes(d));
      const updateRank = c.indexBatchShape.length + windowAxes.length;
      const updateWindowDims = shuffle(c.next, [...Array(updateRank).keys()])
        .slice(0, windowAxes.length)
        .sort((a, b) => a - b);
      const updateShape = new Array<number>(updateRank);
      updateWindowDims.forEach((a, j) => {
        updateShape[a] = c.sliceSizes[windowAxes[j] as number] as number;
      });
      let b = 0;
      for (let a = 0; a < updateRank; a++)
        if (!updateWindowDims.includes(a)) updateShape[a] = c.indexBatchShape[b++] as number;
      const updates = array(
        "i32",
        updateShape,
        Array.from({ length: count(updateShape) }, (_, i) => 100 * (i + 1)),
      );
      const dims: ScatterDimensionNumbers = {
        updateWindowDims,
        insertedWindowDims: c.collapsed,
        inputBatchingDims: c.batchingAxes,
        scatterIndicesBatchingDims: c.batchingIndexAxes,
        scatterDimsToOperandDims: c.startIndexMap,
        indexVectorDim: c.ivd,
      };
      const expected = naiveScatterAdd(c.operand, c.indices, updates, dims);
      for (const region of [addRegion, addRegionSlow]) {
        const [out] = scatter([c.operand], c.indices, [updates], dims, region);
        expect(Array.from((out as NDArray).data as Int32Array)).toEqual(expected);
      }
      // A replace run as row loops (scatter-rows.ts) equals the region called per element.
      const [slowSet] = scatter([c.operand], c.indices, [updates], dims, replaceRegion);
      const [fastSet] = scatter([c.operand], c.indices, [updates], dims, replaceRegion, { updateKind: "replace" });
      expect(Array.from((fastSet as NDArray).data as Int32Array)).toEqual(
        Array.from((slowSet as NDArray).data as Int32Array),
      );
      // Reusing the input's storage gives the same result, in that storage.
      const own = { ...c.operand, data: (c.operand.data as Int32Array).slice() };
      const [reused] = scatter([own], c.indices, [updates], dims, addRegion, { reuseInput: true });
      expect((reused as NDArray).data).toBe(own.data);
      expect(Array.from((reused as NDArray).data as Int32Array)).toEqual(expected);
    }
  });

  const pointDims: ScatterDimensionNumbers = {
    updateWindowDims: [],
    insertedWindowDims: [0],
    inputBatchingDims: [],
    scatterIndicesBatchingDims: [],
    scatterDimsToOperandDims: [0],
    indexVectorDim: 1,
  };

  test("duplicate indices apply in index order: the last replacement wins", () => {
    const input = array("f32", [4], [0, 0, 0, 0]);
    const indices = array("i32", [5, 1], [3, 1, 3, -1, 1]);
    const updates = array("f32", [5], [1, 2, 3, 4, 5]);
    const [out] = scatter([input], indices, [updates], pointDims, replaceRegion);
    expect(Array.from((out as NDArray).data as Float32Array)).toEqual([0, 5, 0, 3]);
  });

  test("many duplicates through batched rounds keep sequential order (replace and subtract)", () => {
    const next = rng(8);
    const n = 60;
    const idx = Array.from({ length: n }, () => randInt(next, -1, 6));
    const vals = Array.from({ length: n }, (_, i) => i + 1);
    const minus = region(([a, b]) => [(a as number) * 2 - (b as number)], null);
    for (const [r, op] of [
      [replaceRegion, (_a: number, b: number) => b],
      [minus, (a: number, b: number) => a * 2 - b],
    ] as const) {
      const expected = [0, 0, 0, 0, 0, 0];
      idx.forEach((t, i) => {
        if (t >= 0 && t < 6) expected[t] = op(expected[t] as number, vals[i] as number);
      });
      const [out] = scatter(
        [array("f64", [6], [0, 0, 0, 0, 0, 0])],
        array("i32", [n, 1], idx),
        [array("f64", [n], vals)],
        pointDims,
        r,
      );
      expect(Array.from((out as NDArray).data as Float64Array)).toEqual(expected);
    }
  });

  test("two operands with one region (an argmax-style update)", () => {
    const values = array("f32", [2], [0, 0]);
    const positions = array("i32", [2], [-1, -1]);
    const indices = array("i32", [3, 1], [0, 0, 1]);
    const argmaxRegion: RegionInfo = region(
      ([v, p, uv, up]) => ((uv as number) > (v as number) ? [uv as number, up as number] : [v as number, p as number]),
      null,
    );
    const [v, p] = scatter(
      [values, positions],
      indices,
      [array("f32", [3], [5, 7, 2]), array("i32", [3], [10, 11, 12])],
      pointDims,
      argmaxRegion,
    );
    expect(Array.from((v as NDArray).data as Float32Array)).toEqual([7, 2]);
    expect(Array.from((p as NDArray).data as Int32Array)).toEqual([11, 12]);
  });

  test("fast reducers keep the element type's arithmetic: i8 wraps, max propagates NaN", () => {
    const i8 = scatter(
      [array("i8", [1], [100])],
      array("i32", [2, 1], [0, 0]),
      [array("i8", [2], [100, 100])],
      pointDims,
      addRegion,
    )[0] as NDArray;
    expect(Array.from(i8.data as Int8Array)).toEqual([44]);
    const maxRegion: RegionInfo = region(([a, b]) => [Math.max(a as number, b as number)], "max");
    const nan = scatter(
      [array("f32", [2], [1, 1])],
      array("i32", [1, 1], [1]),
      [array("f32", [1], [Number.NaN])],
      pointDims,
      maxRegion,
    )[0] as NDArray;
    expect(Number.isNaN(nan.data[1] as number)).toBe(true);
  });

  test("mismatched update shape is a typed error", () => {
    let caught: unknown;
    try {
      scatter(
        [array("f32", [4], [0, 0, 0, 0])],
        array("i32", [2, 1], [0, 1]),
        [array("f32", [3], [1, 2, 3])],
        pointDims,
        addRegion,
      );
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

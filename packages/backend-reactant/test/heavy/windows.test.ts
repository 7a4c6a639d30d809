import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray, RegionInfo, Scalar } from "../../src/array.ts";
import { type ReduceWindowAttributes, reduceWindow, selectAndScatter } from "../../src/kernels/heavy/index.ts";
import { array, count, randInt, rng, region } from "./helpers.ts";
import { naiveReduceWindow } from "./window-oracle.ts";

const add: RegionInfo = region(([a, b]) => [(a as number) + (b as number)], "add");
const max: RegionInfo = region(([a, b]) => [Math.max(a as number, b as number)], "max");
const slow = (r: RegionInfo): RegionInfo => region(r.fn, null);

describe("reduce_window", () => {
  test("interpret/reduce_window.mlir: base and window dilations with padding", () => {
    const input = array("i64", [3, 2], [1n, 2n, 3n, 4n, 5n, 6n]);
    const zero = array("i64", [], [0n]);
    const addBig: RegionInfo = region(([a, b]) => [(a as bigint) + (b as bigint)], "add");
    const attrs = {
      windowDimensions: [2, 1],
      windowStrides: [4, 1],
      baseDilations: [2, 1],
      windowDilations: [3, 1],
      padding: [
        [2, 1],
        [0, 0],
      ] as [number, number][],
    };
    const [out] = reduceWindow([input], [zero], attrs, addBig);
    expect((out as NDArray).shape).toEqual([2, 2]);
    expect(Array.from((out as NDArray).data as BigInt64Array, Number)).toEqual([0, 0, 3, 4]);
    const [issue] = reduceWindow([input], [zero], { ...attrs, windowDimensions: [3, 1] }, slow(addBig));
    expect(Array.from((issue as NDArray).data as BigInt64Array, Number)).toEqual([5, 6]);
  });

  test("matches pad-dilate-slice-reduce on 200 random windows (fast and region paths)", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = rng(seed);
      const rank = randInt(next, 1, 3);
      const shape = Array.from({ length: rank }, () => randInt(next, 1, 6));
      const attrs: Required<ReduceWindowAttributes> = {
        windowDimensions: shape.map(() => randInt(next, 1, 3)),
        windowStrides: shape.map(() => randInt(next, 1, 3)),
        baseDilations: shape.map(() => randInt(next, 1, 2)),
        windowDilations: shape.map(() => randInt(next, 1, 2)),
        padding: shape.map(() => [randInt(next, -1, 2), randInt(next, -1, 2)] as [number, number]),
      };
      const values = Array.from({ length: count(shape) }, () => randInt(next, -50, 50));
      const input = array("f32", shape, values);
      for (const [region, init, op] of [
        [add, 0, (a: number, b: number) => a + b],
        [max, Number.NEGATIVE_INFINITY, Math.max],
      ] as const) {
        const expected = naiveReduceWindow(shape, values, init, attrs, op);
        for (const r of [region, slow(region)]) {
          const [out] = reduceWindow([input], [array("f32", [], [init])], attrs, r);
          expect((out as NDArray).shape).toEqual(expected.shape);
          expect(Array.from((out as NDArray).data as Float32Array)).toEqual(expected.data);
        }
      }
    }
  });

  test("NHWC max pooling (channels looped contiguously) and f16 sums", () => {
    const input = array(
      "f32",
      [1, 4, 4, 2],
      Array.from({ length: 32 }, (_, i) => (i % 2 === 0 ? i : -i)),
    );
    const attrs = {
      windowDimensions: [1, 3, 3, 1],
      windowStrides: [1, 2, 2, 1],
      padding: [
        [0, 0],
        [1, 1],
        [1, 1],
        [0, 0],
      ] as [number, number][],
    };
    const [fast] = reduceWindow([input], [array("f32", [], [Number.NEGATIVE_INFINITY])], attrs, max);
    const [reference] = reduceWindow([input], [array("f32", [], [Number.NEGATIVE_INFINITY])], attrs, slow(max));
    expect((fast as NDArray).shape).toEqual([1, 2, 2, 2]);
    expect(Array.from((fast as NDArray).data as Float32Array)).toEqual(
      Array.from((reference as NDArray).data as Float32Array),
    );
    expect(Array.from((fast as NDArray).data as Float32Array)).toEqual([10, -1, 14, -3, 26, -9, 30, -11]);
  });

  test("two operands with a region (argmax over windows)", () => {
    const values = array("f32", [4], [3, 9, 9, 1]);
    const indices = array("i32", [4], [0, 1, 2, 3]);
    const argmax: RegionInfo = region(
      ([v, i, w, j]) => ((w as number) > (v as number) ? [w as Scalar, j as Scalar] : [v as Scalar, i as Scalar]),
      null,
    );
    const [v, i] = reduceWindow(
      [values, indices],
      [array("f32", [], [Number.NEGATIVE_INFINITY]), array("i32", [], [-1])],
      { windowDimensions: [2] },
      argmax,
    );
    expect(Array.from((v as NDArray).data as Float32Array)).toEqual([9, 9, 9]);
    expect(Array.from((i as NDArray).data as Int32Array)).toEqual([1, 1, 2]);
  });

  test("two operands over many outputs (the batched region path) match the scalar definition", () => {
    const next = rng(21);
    const n = 40;
    const data = Array.from({ length: n }, () => randInt(next, 0, 9));
    const values = array("f32", [n], data);
    const indices = array(
      "i32",
      [n],
      data.map((_, i) => i),
    );
    const argmax = region(
      ([v, i, w, j]) => ((w as number) > (v as number) ? [w as Scalar, j as Scalar] : [v as Scalar, i as Scalar]),
      null,
    );
    const attrs = { windowDimensions: [4], windowStrides: [2], padding: [[1, 2]] as [number, number][] };
    const [v, i] = reduceWindow([values, indices], [array("f32", [], [-1]), array("i32", [], [-1])], attrs, argmax);
    const expectedV: number[] = [];
    const expectedI: number[] = [];
    for (let o = 0; o < (v as NDArray).shape[0]!; o++) {
      let best = -1;
      let at = -1;
      for (let k = 0; k < 4; k++) {
        const x = o * 2 + k - 1;
        if (x >= 0 && x < n && (data[x] as number) > best) [best, at] = [data[x] as number, x];
      }
      expectedV.push(best);
      expectedI.push(at);
    }
    expect((v as NDArray).shape).toEqual([20]);
    expect(Array.from((v as NDArray).data as Float32Array)).toEqual(expectedV);
    expect(Array.from((i as NDArray).data as Int32Array)).toEqual(expectedI);
  });

  test("a zero window size is a typed error", () => {
    let caught: unknown;
    try {
      reduceWindow([array("f32", [2], [1, 2])], [array("f32", [], [0])], { windowDimensions: [0] }, add);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

describe("select_and_scatter", () => {
  const ge: RegionInfo = region(([a, b]) => [(a as bigint) >= (b as bigint) ? 1 : 0], null, ["i1"]);
  const addBig: RegionInfo = region(([a, b]) => [(a as bigint) + (b as bigint)], "add");

  test("interpret/select_and_scatter.mlir (padding never selected)", () => {
    const operand = array("i64", [4, 2], [1n, 5n, 2n, 5n, 3n, 6n, 4n, 4n]);
    const source = array("i64", [2, 2], [5n, 6n, 7n, 8n]);
    const attrs = {
      windowDimensions: [3, 1],
      windowStrides: [2, 1],
      padding: [
        [0, 1],
        [0, 0],
      ] as [number, number][],
    };
    for (const scatterRegion of [addBig, slow(addBig)]) {
      const out = selectAndScatter(operand, source, array("i64", [], [0n]), attrs, ge, scatterRegion);
      expect(Array.from(out.data as BigInt64Array, Number)).toEqual([0, 0, 0, 0, 5, 14, 7, 0]);
    }
  });

  test("ties go to the first element under GE, overlapping windows accumulate", () => {
    const geF: RegionInfo = region(([a, b]) => [(a as number) >= (b as number) ? 1 : 0], null, ["i1"]);
    const out = selectAndScatter(
      array("f32", [4], [2, 2, 1, 2]),
      array("f32", [3], [10, 20, 30]),
      array("f32", [], [0]),
      { windowDimensions: [2] },
      geF,
      add,
    );
    expect(Array.from(out.data as Float32Array)).toEqual([10, 20, 0, 30]);
    const overlapping = selectAndScatter(
      array("f32", [3], [1, 5, 1]),
      array("f32", [2], [1, 2]),
      array("f32", [], [0]),
      { windowDimensions: [2] },
      geF,
      add,
    );
    expect(Array.from(overlapping.data as Float32Array)).toEqual([0, 3, 0]);
  });

  test("source shape must match the window output", () => {
    let caught: unknown;
    try {
      selectAndScatter(
        array("f32", [4], [1, 2, 3, 4]),
        array("f32", [2], [1, 1]),
        array("f32", [], [0]),
        { windowDimensions: [2] },
        ge,
        add,
      );
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

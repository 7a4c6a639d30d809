import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray, RegionInfo } from "../../src/array.ts";
import { sort } from "../../src/kernels/heavy/index.ts";
import { array, randInt, rng, region } from "./helpers.ts";

const lessFirst: RegionInfo = region((args) => [(args[0] as number) < (args[1] as number) ? 1 : 0], null, ["i1"]);
const greaterFirst: RegionInfo = region((args) => [(args[0] as number) > (args[1] as number) ? 1 : 0], null, ["i1"]);
const values = (a: NDArray | undefined) => Array.from((a as NDArray).data as ArrayLike<number>);

describe("sort", () => {
  test("stable on ties, carrying a second operand along", () => {
    const keys = array("i32", [6], [3, 1, 3, 2, 1, 3]);
    const tags = array("i32", [6], [0, 1, 2, 3, 4, 5]);
    const [k, t] = sort([keys, tags], 0, lessFirst);
    expect(values(k)).toEqual([1, 1, 2, 3, 3, 3]);
    expect(values(t)).toEqual([1, 4, 3, 0, 2, 5]);
    const [, td] = sort([keys, tags], 0, greaterFirst);
    expect(values(td)).toEqual([0, 2, 5, 3, 1, 4]);
  });

  test("sorts along any dimension of a 3-d array", () => {
    const data = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1, -2];
    const input = array("f32", [2, 3, 2], data);
    expect(values(sort([input], 1, lessFirst)[0])).toEqual([5, 4, 7, 6, 9, 8, -1, -2, 1, 0, 3, 2]);
    expect(values(sort([input], 0, lessFirst)[0])).toEqual([3, 2, 1, 0, -1, -2, 9, 8, 7, 6, 5, 4]);
    expect(values(sort([input], -1, lessFirst)[0])).toEqual([8, 9, 6, 7, 4, 5, 2, 3, 0, 1, -2, -1]);
  });

  test("total-order fast key: -NaN < -Inf < -0 < +0 < Inf < NaN, same answer as a total-order region", () => {
    const raw = new Float32Array([
      Number.NaN,
      0,
      Number.POSITIVE_INFINITY,
      -0,
      1,
      Number.NEGATIVE_INFINITY,
      -2,
      Number.NaN,
    ]);
    new Uint32Array(raw.buffer)[7] = 0xffc00000; // a negative NaN
    const input: NDArray = { type: "f32", shape: [8], data: raw };
    const [fast] = sort([input], 0, lessFirst, { fastKey: { operand: 0, descending: false, totalOrder: true } });
    const bits = Array.from(new Uint32Array(((fast as NDArray).data as Float32Array).buffer));
    expect(bits[0]).toBe(0xffc00000);
    expect(values(fast).slice(1, 7)).toEqual([Number.NEGATIVE_INFINITY, -2, -0, 0, 1, Number.POSITIVE_INFINITY]);
    expect(Object.is(values(fast)[3], -0)).toBe(true);
    expect(Number.isNaN(values(fast)[7])).toBe(true);
    // f64 and descending agree with a reversed order (ties excepted: none here).
    const f64: NDArray = { type: "f64", shape: [6], data: new Float64Array([1, -0, Number.NaN, 0, -1e300, 1e-300]) };
    const [desc] = sort([f64], 0, greaterFirst, { fastKey: { operand: 0, descending: true, totalOrder: true } });
    const d = values(desc);
    expect(Number.isNaN(d[0])).toBe(true);
    expect(d.slice(1)).toEqual([1, 1e-300, 0, -0, -1e300]);
    expect(Object.is(d[4], -0)).toBe(true);
  });

  test("the fast key and the region give the same order on random data with ties", () => {
    const next = rng(5);
    for (let trial = 0; trial < 20; trial++) {
      const n = randInt(next, 1, 40);
      const keys = array(
        "i64",
        [n],
        Array.from({ length: n }, () => BigInt(randInt(next, -3, 3)) * 2n ** 40n),
      );
      const tags = array(
        "i32",
        [n],
        Array.from({ length: n }, (_, i) => i),
      );
      const bigLess: RegionInfo = region((a) => [(a[0] as bigint) < (a[1] as bigint) ? 1 : 0], null, ["i1"]);
      const [, slowTags] = sort([keys, tags], 0, bigLess);
      const [, fastTags] = sort([keys, tags], 0, bigLess, {
        fastKey: { operand: 0, descending: false, totalOrder: false },
      });
      expect(values(fastTags)).toEqual(values(slowTags));
    }
  });

  test("large sorts (batched network) equal a stable sort, on any axis, with ties and odd lengths", () => {
    const next = rng(13);
    for (const [shape, axis] of [
      [[100], 0],
      [[7, 37], 1],
      [[37, 5], 0],
      [[3, 50, 2], 1],
    ] as const) {
      const n = shape.reduce((p: number, d: number) => p * d, 1);
      const keys = array(
        "i32",
        [...shape],
        Array.from({ length: n }, () => randInt(next, 0, 9)),
      );
      const tags = array(
        "i32",
        [...shape],
        Array.from({ length: n }, (_, i) => i),
      );
      const [k, t] = sort([keys, tags], axis, lessFirst);
      // Reference: JS's stable sort of each line.
      const stride = shape.slice(axis + 1).reduce((p: number, d: number) => p * d, 1);
      const length = shape[axis] as number;
      const expectedTags = new Array<number>(n);
      for (let line = 0; line < n / length; line++) {
        const base = Math.floor(line / stride) * length * stride + (line % stride);
        const positions = Array.from({ length }, (_, i) => base + i * stride);
        const sorted = [...positions].sort((a, b) => (keys.data[a] as number) - (keys.data[b] as number));
        positions.forEach((at, i) => {
          expectedTags[at] = sorted[i] as number;
        });
      }
      expect(values(t)).toEqual(expectedTags);
      expect(values(k)).toEqual(expectedTags.map((i) => keys.data[i] as number));
    }
  });

  test("operands of different shapes are a typed error", () => {
    let caught: unknown;
    try {
      sort([array("f32", [2], [1, 2]), array("f32", [3], [1, 2, 3])], 0, lessFirst);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

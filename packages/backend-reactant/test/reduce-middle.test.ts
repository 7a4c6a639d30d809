import { describe, expect, test } from "bun:test";
import { type NDArray, allocData } from "../src/array.ts";
import { maxFloat } from "../src/elem/branchless.ts";
import { reduceFor } from "../src/kernels/reduce.ts";
import { middleSplit } from "../src/kernels/reduce-middle.ts";
import { region, rng } from "./heavy/helpers.ts";

/** Sequential reference: each output combines its inputs in index order, rounded to f32 each step. */
function reference(
  x: Float32Array,
  [A, R, B]: [number, number, number],
  op: (a: number, b: number) => number,
  start: number,
): number[] {
  const out: number[] = [];
  for (let a = 0; a < A; a++)
    for (let b = 0; b < B; b++) {
      let acc = start;
      for (let r = 0; r < R; r++) acc = Math.fround(op(acc, x[(a * R + r) * B + b] as number));
      out.push(acc);
    }
  return out;
}

describe("reduce over middle axes", () => {
  test("the split is found only for consecutive axes followed by a kept one", () => {
    expect(middleSplit([2, 3, 4, 5], [1, 2])).toEqual([2, 12, 5]);
    expect(middleSplit([2, 3, 4, 5], [0])).toEqual([1, 2, 60]);
    expect(middleSplit([2, 3, 4, 5], [3])).toBeNull();
    expect(middleSplit([2, 3, 4, 5], [1, 3])).toBeNull();
  });

  test("add, max and min match the sequential f32 loop bit for bit (NaN propagates)", () => {
    const next = rng(5);
    const shape = [3, 7, 4, 6];
    const n = shape.reduce((p, s) => p * s, 1);
    const data = Float32Array.from({ length: n }, () => (next() - 0.5) * 1e3);
    data[17] = Number.NaN;
    const x: NDArray = { type: "f32", shape, data };
    const cases: [string, (a: number, b: number) => number, number][] = [
      ["add", (a, b) => a + b, 0],
      ["max", maxFloat, Number.NEGATIVE_INFINITY],
      ["min", (a, b) => -maxFloat(-a, -b), Number.POSITIVE_INFINITY],
    ];
    for (const dims of [[1], [1, 2], [2], [0, 1]]) {
      const split = middleSplit(shape, dims) as [number, number, number];
      for (const [kind, op, start] of cases) {
        const init: NDArray = { type: "f32", shape: [], data: new Float32Array([start]) };
        const body = region(([a, b]) => [op(a as number, b as number)], kind as "add");
        const [out] = reduceFor(dims)([x], [init], body, (t, k) => allocData(t, k));
        const got = Array.from((out as NDArray).data as Float32Array);
        expect(got).toEqual(reference(data, split, op, start));
        expect((out as NDArray).shape).toEqual(shape.filter((_, d) => !dims.includes(d)));
      }
    }
  });
});

import { describe, expect, test } from "bun:test";
import type { ElemType } from "../src/array.ts";
import { iota } from "../src/kernels/layout.ts";

/** iota along the last axis is written as one line and copies of it; every type keeps its values. */
describe("iota", () => {
  const cases: [ElemType, number[], number][] = [
    ["i32", [3, 5], 1],
    ["f32", [2, 3, 4], 2],
    ["ui8", [2, 300], 1],
    ["i32", [4, 3], 0],
    ["f64", [7], 0],
  ];
  for (const [type, shape, dim] of cases) {
    test(`${type} [${shape}] along ${dim}`, () => {
      const out = iota(type, shape, dim);
      const inner = shape.slice(dim + 1).reduce((p, d) => p * d, 1);
      const size = shape[dim] as number;
      const expected = Array.from({ length: out.data.length }, (_, i) => Math.floor(i / inner) % size);
      const wrapped = type === "ui8" ? expected.map((v) => v & 255) : expected;
      expect(out.shape).toEqual(shape);
      expect(Array.from(out.data as ArrayLike<number>)).toEqual(wrapped);
    });
  }

  test("i64 values are bigints", () => {
    expect(Array.from(iota("i64", [2, 3], 1).data as BigInt64Array)).toEqual([0n, 1n, 2n, 0n, 1n, 2n]);
  });
});

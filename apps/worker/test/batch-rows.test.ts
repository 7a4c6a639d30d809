import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { chooseBatchSize, concatAxis, padAxis, sliceAxis, sliceRange } from "../src/model/batch-rows.ts";

const t = (shape: number[], start = 0): HostTensor => ({
  dtype: "f32",
  shape,
  data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => start + i),
});

describe("batch shapes", () => {
  test("the smallest compiled size that holds the batch", () => {
    expect(chooseBatchSize([1, 8], 1)).toBe(1);
    expect(chooseBatchSize([8, 1], 3)).toBe(8);
    expect(chooseBatchSize([1, 8], 9)).toBeUndefined();
  });
  test("pad, concatenate and slice along a leading and an inner axis", () => {
    const a = t([2, 3]);
    const b = t([1, 3], 100);
    expect(Array.from(concatAxis([a, b], 0).data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5, 100, 101, 102]);
    const padded = padAxis(a, 0, 4);
    expect(padded.shape).toEqual([4, 3]);
    expect(Array.from(padded.data as Float32Array).slice(6)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from(sliceAxis(padded, 0, 2).data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5]);
    // inner batch axis: shape [3, n]
    const c = t([3, 2]);
    const d = t([3, 1], 50);
    const cd = concatAxis([c, d], 1);
    expect(cd.shape).toEqual([3, 3]);
    expect(Array.from(cd.data as Float32Array)).toEqual([0, 1, 50, 2, 3, 51, 4, 5, 52]);
    expect(Array.from(sliceRange(cd, 1, 2, 1).data as Float32Array)).toEqual([50, 51, 52]);
    expect(Array.from(padAxis(d, 1, 2).data as Float32Array)).toEqual([50, 0, 51, 0, 52, 0]);
  });
});

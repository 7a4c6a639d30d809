import { describe, expect, test } from "bun:test";
import { type NDArray, allocData, elementCount, slotsPerElement, strides } from "../src/array.ts";
import { concatenate, mergeAxes, slice, transpose } from "../src/kernels/layout.ts";

/** Random dense array of `type`, every slot a distinct small integer (bigints for 64-bit types). */
function filled(type: "f32" | "i8" | "i64" | "c64", shape: number[], seed: number): NDArray {
  const slots = slotsPerElement(type) * elementCount(shape);
  const data = allocData(type, elementCount(shape));
  for (let i = 0; i < slots; i++) {
    const v = ((i * 7919 + seed * 104729) % 251) - 125;
    (data as unknown as (number | bigint)[])[i] = type === "i64" ? BigInt(v) : v;
  }
  return { type, shape, data };
}

/** Element `index` (multi-index) of a dense array, as its slots. */
function at(x: NDArray, index: number[]): unknown[] {
  const st = strides(x.shape);
  const slots = slotsPerElement(x.type);
  const e = index.reduce((s, v, d) => s + v * (st[d] as number), 0);
  return Array.from({ length: slots }, (_, k) => x.data[e * slots + k]);
}

function forEachIndex(shape: number[], f: (index: number[]) => void): void {
  const n = elementCount(shape);
  const idx = shape.map(() => 0);
  for (let i = 0; i < n; i++) {
    f(idx);
    for (let d = shape.length - 1; d >= 0; d--) {
      idx[d] = (idx[d] as number) + 1;
      if ((idx[d] as number) < (shape[d] as number)) break;
      idx[d] = 0;
    }
  }
}

const TYPES = ["f32", "i8", "i64", "c64"] as const;

describe("data movement over merged axes", () => {
  test("mergeAxes drops unit axes and joins axes that step by the next one's extent", () => {
    expect(mergeAxes([6144, 192, 64, 16, 1], [8, 32, 1, 4, 16])).toEqual({ step: [192, 1], shape: [256, 64] });
    expect(mergeAxes([0, 1], [5, 7])).toEqual({ step: [0, 1], shape: [5, 7] });
    expect(mergeAxes([0, 0], [1, 1])).toEqual({ step: [0], shape: [1] });
    expect(mergeAxes([1, 4], [4, 3])).toEqual({ step: [1, 4], shape: [4, 3] });
  });

  test("slices and transposes of every storage class match the index oracle", () => {
    for (const type of TYPES) {
      const x = filled(type, [3, 4, 1, 5, 6], 3);
      const s = slice(x, [1, 0, 0, 1, 0], [3, 4, 1, 4, 6], [1, 2, 1, 1, 1]);
      expect(s.shape).toEqual([2, 2, 1, 3, 6]);
      forEachIndex(s.shape, (i) => {
        const src = [(i[0] as number) + 1, (i[1] as number) * 2, 0, (i[3] as number) + 1, i[4] as number];
        expect(at(s, i)).toEqual(at(x, src));
      });
      const perm = [1, 0, 2, 3, 4];
      const t = transpose(x, perm);
      forEachIndex(t.shape, (i) => {
        const src = new Array<number>(5);
        perm.forEach((p, d) => {
          src[p] = i[d] as number;
        });
        expect(at(t, i)).toEqual(at(x, src));
      });
    }
  });

  test("concatenating short rows (NHWC channels) and long rows matches the index oracle", () => {
    for (const type of TYPES)
      for (const [c1, c2] of [
        [3, 5],
        [40, 70],
      ] as const) {
        const a = filled(type, [2, 3, c1], 1);
        const b = filled(type, [2, 3, c2], 2);
        const out = concatenate([a, b], 2);
        expect(out.shape).toEqual([2, 3, c1 + c2]);
        forEachIndex(out.shape, (i) => {
          const c = i[2] as number;
          const want =
            c < c1 ? at(a, [i[0] as number, i[1] as number, c]) : at(b, [i[0] as number, i[1] as number, c - c1]);
          expect(at(out, i)).toEqual(want);
        });
      }
  });
});

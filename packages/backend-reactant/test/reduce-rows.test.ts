import { describe, expect, test } from "bun:test";
import { maxFloat, minFloat } from "../src/elem/branchless.ts";
import { reduceFloatRows } from "../src/kernels/reduce-rows.ts";

/** Each row combined in index order, one element at a time: the loops' contract. */
function reference(kind: "add" | "max" | "min", s: Float32Array, K: number, R: number, start: number): Float32Array {
  const out = new Float32Array(K);
  for (let k = 0; k < K; k++) {
    let acc = start;
    for (let r = 0; r < R; r++) {
      const v = s[k * R + r] as number;
      acc = kind === "add" ? Math.fround(acc + v) : kind === "max" ? maxFloat(acc, v) : minFloat(acc, v);
    }
    out[k] = acc;
  }
  return out;
}

describe("f32 row reductions", () => {
  test("add, max and min over row counts around the four-row blocks keep each row's bits", () => {
    const specials = [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-45];
    for (const K of [1, 3, 4, 5, 8, 11]) {
      for (const R of [1, 2, 7, 32]) {
        const s = Float32Array.from({ length: K * R }, (_, i) =>
          i % 13 === 5 ? (specials[i % specials.length] as number) : Math.sin(i * 12.9898) * 1e3,
        );
        for (const kind of ["add", "max", "min"] as const) {
          const start = kind === "add" ? -0 : kind === "max" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
          const out = new Float32Array(K);
          expect(reduceFloatRows(kind, s, out, K, R, start)).toBe(true);
          const want = reference(kind, s, K, R, start);
          for (let k = 0; k < K; k++) expect(Object.is(out[k], want[k])).toBe(true);
        }
      }
    }
  });
});

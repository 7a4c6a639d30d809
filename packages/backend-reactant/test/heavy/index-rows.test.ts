import { describe, expect, test } from "bun:test";
import type { NDArray } from "../../src/array.ts";
import {
  type GatherDimensionNumbers,
  type ScatterDimensionNumbers,
  gather,
  scatter,
} from "../../src/kernels/heavy/index.ts";
import { array, randInt, randomF32, region, rng } from "./helpers.ts";

/**
 * The flat loop over index rows (index-rows.ts) against the general walk: i64 indices always
 * take the general path, so the same case with i32 and i64 indices must give the same bytes.
 */
const addRegion = region(([a, b]) => [(a as number) + (b as number)], "add");
const replaceRegion = region((args) => [args[1] as number], null);

function withI64(indices: NDArray): NDArray {
  return { type: "i64", shape: indices.shape, data: BigInt64Array.from(indices.data as Int32Array, (x) => BigInt(x)) };
}

function bytes(a: NDArray): number[] {
  return Array.from(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
}

/** An embedding lookup: row i of the table for index i. */
const ROW_GATHER: GatherDimensionNumbers = {
  offsetDims: [1],
  collapsedSliceDims: [0],
  operandBatchingDims: [],
  startIndicesBatchingDims: [],
  startIndexMap: [0],
  indexVectorDim: 1,
};

/** A segment sum's layout: update row k goes to row index[k]. */
const ROW_SCATTER: ScatterDimensionNumbers = {
  updateWindowDims: [1],
  insertedWindowDims: [0],
  inputBatchingDims: [],
  scatterIndicesBatchingDims: [],
  scatterDimsToOperandDims: [0],
  indexVectorDim: 1,
};

describe("gather and scatter over index rows", () => {
  test("embedding lookups and row windows, out-of-range starts clamped", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const next = rng(seed);
      const rows = randInt(next, 1, 9);
      const width = randInt(next, 1, 70);
      const table = randomF32(next, [rows, width]);
      const n = randInt(next, 1, 12);
      const indices = array(
        "i32",
        [n, 1],
        Array.from({ length: n }, () => randInt(next, -3, rows + 2)),
      );
      const window = randInt(next, 1, rows);
      const cases: [GatherDimensionNumbers, number[]][] = [
        [ROW_GATHER, [1, width]],
        [
          {
            offsetDims: [1, 2],
            collapsedSliceDims: [],
            operandBatchingDims: [],
            startIndicesBatchingDims: [],
            startIndexMap: [0],
            indexVectorDim: 1,
          },
          [window, width],
        ],
      ];
      for (const [dims, sizes] of cases) {
        const fast = gather(table, indices, dims, sizes);
        const general = gather(table, withI64(indices), dims, sizes);
        expect(fast.shape).toEqual(general.shape);
        expect(bytes(fast)).toEqual(bytes(general));
      }
    }
  });

  test("segment sums, `.at[].set` and two-component indices, windows that do not fit skipped", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const next = rng(seed);
      const rows = randInt(next, 1, 8);
      const width = randInt(next, 1, 40);
      const n = randInt(next, 1, 20);
      const operand = randomF32(next, [rows, width]);
      const rowIndices = array(
        "i32",
        [n, 1],
        Array.from({ length: n }, () => randInt(next, -2, rows + 1)),
      );
      const rowDims = ROW_SCATTER;
      const rowUpdates = randomF32(next, [n, width]);
      const pairIndices = array(
        "i32",
        [n, 2],
        Array.from({ length: 2 * n }, (_, i) => randInt(next, -1, (i % 2 ? width : rows) + 1)),
      );
      const pairDims: ScatterDimensionNumbers = {
        updateWindowDims: [],
        insertedWindowDims: [0, 1],
        inputBatchingDims: [],
        scatterIndicesBatchingDims: [],
        scatterDimsToOperandDims: [0, 1],
        indexVectorDim: 1,
      };
      const pairUpdates = randomF32(next, [n]);
      for (const [indices, dims, updates] of [
        [rowIndices, rowDims, rowUpdates],
        [pairIndices, pairDims, pairUpdates],
      ] as const) {
        for (const [r, kind] of [
          [addRegion, "add"],
          [replaceRegion, "replace"],
        ] as const) {
          const [fast] = scatter([operand], indices, [updates], dims, r, { updateKind: kind });
          const [general] = scatter([operand], withI64(indices), [updates], dims, r, { updateKind: kind });
          expect(bytes(fast as NDArray)).toEqual(bytes(general as NDArray));
        }
      }
    }
  });

  test("one op's checks kept per shape: the same attributes on new shapes are checked again", () => {
    const gatherDims = ROW_GATHER;
    const scatterDims = ROW_SCATTER;
    const next = rng(5);
    for (const [rows, width, n] of [
      [4, 3, 2],
      [4, 3, 2],
      [6, 5, 3],
      [4, 3, 7],
    ] as const) {
      const table = randomF32(next, [rows, width]);
      const indices = array(
        "i32",
        [n, 1],
        Array.from({ length: n }, () => randInt(next, 0, rows - 1)),
      );
      const kept = gather(table, indices, gatherDims, [1, width]);
      const fresh = gather(table, indices, { ...gatherDims }, [1, width]);
      expect(kept.shape).toEqual([n, width]);
      expect(bytes(kept)).toEqual(bytes(fresh));
      const updates = randomF32(next, [n, width]);
      const [a] = scatter([table], indices, [updates], scatterDims, addRegion, { updateKind: "add" });
      const [b] = scatter([table], indices, [updates], { ...scatterDims }, addRegion, { updateKind: "add" });
      expect(bytes(a as NDArray)).toEqual(bytes(b as NDArray));
    }
    expect(() => gather(randomF32(next, [4, 2]), array("i32", [1, 1], [0]), gatherDims, [1, 3])).toThrow();
  });
});

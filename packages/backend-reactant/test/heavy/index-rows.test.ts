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
        [
          {
            offsetDims: [1],
            collapsedSliceDims: [0],
            operandBatchingDims: [],
            startIndicesBatchingDims: [],
            startIndexMap: [0],
            indexVectorDim: 1,
          },
          [1, width],
        ],
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
      const rowDims: ScatterDimensionNumbers = {
        updateWindowDims: [1],
        insertedWindowDims: [0],
        inputBatchingDims: [],
        scatterIndicesBatchingDims: [],
        scatterDimsToOperandDims: [0],
        indexVectorDim: 1,
      };
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
});

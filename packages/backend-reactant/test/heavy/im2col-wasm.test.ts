import { describe, expect, test } from "bun:test";
import { type ConvAttributes, convGeometry } from "../../src/kernels/heavy/conv-attributes.ts";
import { im2col, tapTables } from "../../src/kernels/heavy/im2col.ts";
import { im2colWorkspace } from "../../src/kernels/heavy/im2col-wasm.ts";
import { NHWC_HWIO } from "./conv-layouts.ts";
import { randInt, randomF32, rng } from "./helpers.ts";

/** The bytes of a float view (NaN payloads and signed zeros included). */
function bytes(view: Float32Array | Float64Array, count: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, count * view.BYTES_PER_ELEMENT).slice();
}

describe("WebAssembly im2col", () => {
  test("fills exactly the JavaScript im2col's rows on 120 random 2-d windows, groups and chunks", () => {
    for (let seed = 1; seed <= 120; seed++) {
      const next = rng(seed);
      const groups = next() < 0.3 ? randInt(next, 2, 3) : 1;
      const groupIn = randInt(next, 1, 9);
      const batch = randInt(next, 1, 3);
      const shape = [batch, randInt(next, 1, 9), randInt(next, 1, 9), groupIn * groups];
      const kernel = [randInt(next, 1, 4), randInt(next, 1, 4), groupIn, groups * randInt(next, 1, 2)];
      const attrs: ConvAttributes = {
        dims: NHWC_HWIO,
        windowStrides: [randInt(next, 1, 3), randInt(next, 1, 3)],
        padding: [
          [randInt(next, -1, 2), randInt(next, -1, 2)],
          [randInt(next, -1, 2), randInt(next, -1, 2)],
        ],
        lhsDilation: [randInt(next, 1, 2), randInt(next, 1, 2)],
        rhsDilation: [randInt(next, 1, 2), randInt(next, 1, 2)],
        featureGroupCount: groups,
      };
      const lhs = randomF32(next, shape);
      const f64 = next() < 0.3;
      const data = f64 ? Float64Array.from(lhs.data as Float32Array) : (lhs.data as Float32Array);
      const g = convGeometry(lhs, randomF32(next, kernel), attrs);
      const positions = (g.outSpatial[0] as number) * (g.outSpatial[1] as number);
      const depth = (g.kernelSpatial[0] as number) * (g.kernelSpatial[1] as number) * groupIn;
      if (positions === 0) continue;
      const tables = tapTables(g);
      const chunk = randInt(next, 1, positions);
      const ws = im2colWorkspace(g, tables, f64, data.length, chunk, depth);
      if (!ws) throw new Error("WebAssembly SIMD is missing");
      ws.input.set(data);
      const expected = f64 ? new Float64Array(chunk * depth) : new Float32Array(chunk * depth);
      for (let group = 0; group < groups; group++)
        for (let n = 0; n < batch; n++)
          for (let row = 0; row < positions; row += chunk) {
            const end = Math.min(positions, row + chunk);
            const src = { data, slots: 1, batchIndex: n, channelOffset: group * groupIn, channelCount: groupIn };
            im2col(g, tables, src, row, end, expected);
            ws.fill(n, group * groupIn, groupIn, row, end);
            expect(bytes(ws.col, (end - row) * depth)).toEqual(bytes(expected, (end - row) * depth));
          }
    }
  });
});

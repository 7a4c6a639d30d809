import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { createReactantBackend } from "../src/index.ts";

/**
 * A transpose of storage the arena did not make (a large uploaded weight) is kept from its
 * second run on: later runs must see the same values, and no step may write into the kept array.
 */
const R = 200;
const C = 100;
// The transpose dies at the update, which would write into it in place were it the arena's.
const text = `func.func @main(%w: tensor<${R}x${C}xf32>, %v: tensor<1x${R}xf32>, %i: tensor<i32>) -> tensor<${C}x${R}xf32> {
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<${R}x${C}xf32>) -> tensor<${C}x${R}xf32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %u = stablehlo.dynamic_update_slice %t, %v, %i, %z : (tensor<${C}x${R}xf32>, tensor<1x${R}xf32>, tensor<i32>, tensor<i32>) -> tensor<${C}x${R}xf32>
  return %u : tensor<${C}x${R}xf32>
}`;

const tensor = (shape: number[], f: (i: number) => number): HostTensor => ({
  dtype: "f32",
  shape,
  data: Float32Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => f(i)),
});

describe("results kept for external storage", () => {
  test("a weight's transpose, read again and updated by a later step, stays right run after run", async () => {
    const b = createReactantBackend();
    try {
      const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text", origin: "t.mlir" }, {});
      const w = await b.upload(tensor([R, C], (i) => i));
      for (let run = 0; run < 4; run++) {
        // A new row at a new place each run, uploaded fresh as a request's input would be.
        const v = await b.upload(tensor([1, R], (i) => -1 - i - run));
        const i = await b.upload({ dtype: "i32", shape: [], data: new Int32Array([run]) });
        const [u] = await Promise.all((await b.execute(exe, [w, v, i])).map((o) => b.download(o)));
        const ud = u?.data as Float32Array;
        for (let c = 0; c < C; c++)
          for (let r = 0; r < R; r++) expect(ud[c * R + r]).toBe(c === run ? -1 - r - run : r * C + c);
        i.dispose();
        v.dispose();
      }
    } finally {
      await b.dispose();
    }
  });
});

import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { NDArray } from "../src/array.ts";
import { createReactantBackend } from "../src/index.ts";
import { ExternalResults } from "../src/kernels/external-results.ts";

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

  test("a result is kept from the second sight of one storage at one version, and made again when the version moves", () => {
    const kept = new ExternalResults();
    const x: NDArray = { type: "f32", shape: [2], data: new Float32Array([1, 2]) };
    let keeps = 0;
    let onces = 0;
    const keep = (): NDArray => {
      keeps++;
      return { type: "f32", shape: [2], data: new Float32Array([keeps, 0]) };
    };
    const once = (): NDArray => {
      onces++;
      return { type: "f32", shape: [2], data: new Float32Array([-onces, 0]) };
    };
    expect(kept.get(x, 7, keep, once).data[0]).toBe(-1);
    expect(kept.get(x, 7, keep, once).data[0]).toBe(1);
    expect(kept.get(x, 7, keep, once).data[0]).toBe(1);
    // Pooled storage handed out again (a new version): its old result is stale.
    expect(kept.get(x, 8, keep, once).data[0]).toBe(-2);
    expect(kept.get(x, 9, keep, once).data[0]).toBe(-3);
    expect(kept.get(x, 9, keep, once).data[0]).toBe(2);
    // Another shape over the same storage (a reshape) is another result.
    expect(kept.get({ ...x, shape: [1, 2] }, 9, keep, once).data[0]).toBe(3);
    expect([keeps, onces]).toEqual([3, 3]);
  });

  test("a small weight (pooled) transposed stays right when its pooled storage is uploaded again with other values", async () => {
    const b = createReactantBackend();
    const n = 16;
    const small = `func.func @main(%w: tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32> {
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32>
  return %t : tensor<${n}x${n}xf32>
}`;
    try {
      const exe = await b.compile({ bytes: new TextEncoder().encode(small), format: "text", origin: "t.mlir" }, {});
      for (let upload = 0; upload < 3; upload++) {
        // Disposed after its runs, so the next upload may get the same pooled array back.
        const w = await b.upload(tensor([n, n], (i) => i * 3 + upload));
        for (let run = 0; run < 3; run++) {
          const [t] = await Promise.all((await b.execute(exe, [w])).map((o) => b.download(o)));
          const td = t?.data as Float32Array;
          for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) expect(td[r * n + c]).toBe((c * n + r) * 3 + upload);
        }
        w.dispose();
      }
    } finally {
      await b.dispose();
    }
  });
});

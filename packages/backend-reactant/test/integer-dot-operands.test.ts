import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { createReactantBackend } from "../src/index.ts";
import { recycledWeightRounds } from "./helpers/recycled-weights.ts";

/**
 * A quantized layer's integer operands are widened to floats once and kept while their storage
 * keeps its version: a weight buffer disposed and its pooled storage handed to a new upload, or a
 * buffer a loop updates in place, must never give the old contents' products.
 */
const i8 = (shape: number[], f: (i: number) => number): HostTensor => ({
  dtype: "i8",
  shape,
  data: Int8Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f(i)),
});

function reference(x: Int8Array, w: Int8Array, m: number, k: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) s += (x[i * k + q] as number) * (w[q * n + j] as number);
      out.push(s);
    }
  return out;
}

const DOT = `func.func @main(%x: tensor<2x16xi8>, %w: tensor<16x8xi8>) -> tensor<2x8xi32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x16xi8>, tensor<16x8xi8>) -> tensor<2x8xi32>
  return %0 : tensor<2x8xi32>
}`;

describe("integer dot_general operands kept as floats", () => {
  test("a new weight upload in recycled storage gives the new products", async () => {
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: new TextEncoder().encode(DOT), format: "text", origin: "dot.mlir" }, {});
    // Released storage joins the pool when a run ends: this one only ends runs.
    const flush = await b.compile(
      {
        bytes: new TextEncoder().encode(
          "func.func @main(%x: tensor<2x16xi8>) -> tensor<2x16xi8> {\n  %0 = stablehlo.add %x, %x : tensor<2x16xi8>\n  return %0 : tensor<2x16xi8>\n}",
        ),
        format: "text",
        origin: "flush.mlir",
      },
      {},
    );
    const x = i8([2, 16], (i) => ((i * 7) % 11) - 5);
    const xb = await b.upload(x);
    // Each round's weights land in the storage the previous round's disposed weights released
    // (what a stale cache would key on).
    const recycled = await recycledWeightRounds(
      b,
      exe,
      flush,
      xb,
      (round) => i8([16, 8], (i) => ((i * (round + 3)) % 23) - 11),
      (w) => reference(x.data as Int8Array, w.data as Int8Array, 2, 16, 8),
    );
    expect(recycled).toBeGreaterThan(0);
    await b.dispose();
  });

  test("an operand a loop updates in place is read as it is at each iteration", async () => {
    // Row i of %w becomes i + 1 before the product of iteration i; the sums of all products
    // follow the buffer's contents iteration by iteration.
    const text = `func.func @main(%x: tensor<1x4xi8>, %w0: tensor<4x4xi8>) -> tensor<1x4xi32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<4> : tensor<i32>
  %acc0 = stablehlo.constant dense<0> : tensor<1x4xi32>
  %w = stablehlo.add %w0, %w0 : tensor<4x4xi8>
  %r:3 = stablehlo.while(%i = %zero, %buf = %w, %acc = %acc0) : tensor<i32>, tensor<4x4xi8>, tensor<1x4xi32>
  cond {
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    %v = stablehlo.convert %next : (tensor<i32>) -> tensor<i8>
    %row = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<i8>) -> tensor<1x4xi8>
    %upd = stablehlo.dynamic_update_slice %buf, %row, %i, %zero : (tensor<4x4xi8>, tensor<1x4xi8>, tensor<i32>, tensor<i32>) -> tensor<4x4xi8>
    %p = stablehlo.dot_general %x, %upd, contracting_dims = [1] x [0] : (tensor<1x4xi8>, tensor<4x4xi8>) -> tensor<1x4xi32>
    %s = stablehlo.add %acc, %p : tensor<1x4xi32>
    stablehlo.return %next, %upd, %s : tensor<i32>, tensor<4x4xi8>, tensor<1x4xi32>
  }
  return %r#2 : tensor<1x4xi32>
}`;
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text", origin: "loop.mlir" }, {});
    const x = i8([1, 4], (i) => i + 1);
    const w0 = i8([4, 4], (i) => (i % 5) - 2);
    const buf = Int8Array.from(w0.data as Int8Array, (v) => 2 * v);
    const want = [0, 0, 0, 0];
    for (let it = 0; it < 4; it++) {
      buf.fill(it + 1, it * 4, it * 4 + 4);
      reference(x.data as Int8Array, buf, 1, 4, 4).forEach((v, j) => {
        want[j] = (want[j] as number) + v;
      });
    }
    const args = [await b.upload(x), await b.upload(w0)];
    for (let run = 0; run < 3; run++) {
      const [out] = await b.execute(exe, args);
      expect(Array.from((await b.download(out as NonNullable<typeof out>)).data as Int32Array)).toEqual(want);
      out?.dispose();
    }
    await b.dispose();
  });
});

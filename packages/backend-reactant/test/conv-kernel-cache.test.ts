import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { createReactantBackend } from "../src/index.ts";
import { convolution } from "../src/kernels/heavy/convolution.ts";
import { NHWC_HWIO } from "./heavy/conv-layouts.ts";
import { recycledWeightRounds } from "./helpers/recycled-weights.ts";

/**
 * A convolution keeps its kernel widened to f32 while the weight's storage keeps its version: a
 * weight disposed and its pooled storage handed to a new upload, or a kernel a loop updates in
 * place, must never give the old weights' outputs.
 */
const f16 = (shape: number[], f: (i: number) => number): HostTensor => ({
  dtype: "f16",
  shape,
  // Small integers and halves: exact f16 bits (sign, exponent, mantissa) of f(i) / 4.
  data: Uint16Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f16Bits(f(i) / 4)),
});

function f16Bits(x: number): number {
  if (x === 0) return 0;
  const sign = x < 0 ? 0x8000 : 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  return sign | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

const ATTRS = { dims: NHWC_HWIO, padding: [[1, 1] as const, [1, 1] as const] };
const X = "tensor<1x4x4x2xf16>";
const W = "tensor<3x3x2x2xf16>";
const Y = "tensor<1x4x4x2xf16>";
const CONV = (x: string, w: string) =>
  `stablehlo.convolution(${x}, ${w}) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (${X}, ${W}) -> ${Y}`;

function expected(x: HostTensor, w: HostTensor): number[] {
  const out = convolution(
    { type: "f16", shape: [...x.shape], data: x.data as Uint16Array },
    { type: "f16", shape: [...w.shape], data: w.data as Uint16Array },
    ATTRS,
    "f16",
  );
  return Array.from(out.data as Uint16Array);
}

describe("convolution kernels kept as f32", () => {
  test("a new weight upload in recycled storage gives the new outputs", async () => {
    const b = createReactantBackend();
    const text = `func.func @main(%x: ${X}, %w: ${W}) -> ${Y} {\n  %0 = ${CONV("%x", "%w")}\n  return %0 : ${Y}\n}`;
    const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text", origin: "conv.mlir" }, {});
    const flush = await b.compile(
      {
        bytes: new TextEncoder().encode(
          `func.func @main(%x: ${X}) -> ${X} {\n  %0 = stablehlo.add %x, %x : ${X}\n  return %0 : ${X}\n}`,
        ),
        format: "text",
        origin: "flush.mlir",
      },
      {},
    );
    const x = f16([1, 4, 4, 2], (i) => (i % 7) - 3);
    const xb = await b.upload(x);
    const recycled = await recycledWeightRounds(
      b,
      exe,
      flush,
      xb,
      (round) => f16([3, 3, 2, 2], (i) => ((i * (round + 3)) % 9) - 4),
      (w) => expected(x, w),
    );
    expect(recycled).toBeGreaterThan(0);
    await b.dispose();
  });

  test("a kernel a loop updates in place is read as it is at each iteration", async () => {
    // Iteration i sets the kernel's tap row i to i + 1, then convolves and adds to the sum.
    const text = `func.func @main(%x: ${X}, %w0: ${W}) -> ${Y} {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %acc0 = stablehlo.constant dense<0.0> : ${Y}
  %w = stablehlo.add %w0, %w0 : ${W}
  %r:3 = stablehlo.while(%i = %zero, %buf = %w, %acc = %acc0) : tensor<i32>, ${W}, ${Y}
  cond {
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    %v = stablehlo.convert %next : (tensor<i32>) -> tensor<f16>
    %row = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<f16>) -> tensor<1x3x2x2xf16>
    %upd = stablehlo.dynamic_update_slice %buf, %row, %i, %zero, %zero, %zero : (${W}, tensor<1x3x2x2xf16>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> ${W}
    %p = ${CONV("%x", "%upd")}
    %s = stablehlo.add %acc, %p : ${Y}
    stablehlo.return %next, %upd, %s : tensor<i32>, ${W}, ${Y}
  }
  return %r#2 : ${Y}
}`;
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text", origin: "loop.mlir" }, {});
    const x = f16([1, 4, 4, 2], (i) => (i % 5) - 2);
    const w0 = f16([3, 3, 2, 2], (i) => (i % 3) - 1);
    // The same loop without it: each iteration's kernel, convolved on its own.
    const buf = Uint16Array.from(w0.data as Uint16Array, (h) => f16Bits(2 * halfValue(h)));
    const want = new Array<number>(32).fill(0);
    for (let it = 0; it < 3; it++) {
      buf.fill(f16Bits(it + 1), it * 12, it * 12 + 12);
      const y = expected(x, { dtype: "f16", shape: [3, 3, 2, 2], data: buf });
      y.forEach((h, j) => {
        want[j] = halfValue(f16Bits((want[j] as number) + halfValue(h)));
      });
    }
    const args = [await b.upload(x), await b.upload(w0)];
    for (let run = 0; run < 3; run++) {
      const [out] = await b.execute(exe, args);
      const got = Array.from((await b.download(out as NonNullable<typeof out>)).data as Uint16Array, halfValue);
      expect(got).toEqual(want);
      out?.dispose();
    }
    await b.dispose();
  });
});

function halfValue(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

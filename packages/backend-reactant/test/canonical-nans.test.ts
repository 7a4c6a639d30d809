import { describe, expect, test } from "bun:test";
import { type HostTensor, tensorBytes } from "@xlaserve/core";
import type { NDArray } from "../src/array.ts";
import { withCanonicalNaNs } from "../src/canonical-nans.ts";
import { createReactantBackend } from "../src/index.ts";

const f32Bits = (...bits: number[]) => new Float32Array(new Uint32Array(bits).buffer);
const bitsOf32 = (a: ArrayBufferView) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.byteLength / 4));
const hex = (xs: number[]) => xs.map((x) => `0x${x.toString(16)}`);

// NaNs with a payload, with the sign set, signalling; then 1, -inf, -0.
const F32_IN = [0x7fc00001, 0xffc00000, 0x7f800001, 0x3f800000, 0xff800000, 0x80000000];
const F32_NAN = 0x7fc00000;

describe("withCanonicalNaNs", () => {
  test("f32 and c64: every NaN becomes 0x7fc00000, every other value keeps its bits, the input is untouched", () => {
    for (const type of ["f32", "c64"] as const) {
      const data = f32Bits(...F32_IN);
      const a: NDArray = { type, shape: type === "f32" ? [6] : [3], data };
      const out = withCanonicalNaNs(a);
      expect(out).not.toBe(a);
      expect(hex(bitsOf32(out.data))).toEqual(hex([F32_NAN, F32_NAN, F32_NAN, 0x3f800000, 0xff800000, 0x80000000]));
      expect(hex(bitsOf32(data))).toEqual(hex(F32_IN));
    }
  });

  test("f64: every NaN becomes 0x7ff8000000000000", () => {
    const words = new Uint32Array([1, 0x7ff80000, 0, 0xfff80000, 0, 0x3ff00000]); // little-endian pairs
    const out = withCanonicalNaNs({ type: "f64", shape: [3], data: new Float64Array(words.buffer) });
    expect(hex(bitsOf32(out.data))).toEqual(hex([0, 0x7ff80000, 0, 0x7ff80000, 0, 0x3ff00000]));
  });

  test("f16 and bf16 bits: NaNs become the quiet NaN, infinities and numbers stay", () => {
    const f16 = withCanonicalNaNs({
      type: "f16",
      shape: [5],
      data: new Uint16Array([0x7e01, 0xfe00, 0x7c01, 0x7c00, 0x3c00]),
    });
    expect(Array.from(f16.data as Uint16Array)).toEqual([0x7e00, 0x7e00, 0x7e00, 0x7c00, 0x3c00]);
    const bf16 = withCanonicalNaNs({
      type: "bf16",
      shape: [4],
      data: new Uint16Array([0x7fc1, 0xffc0, 0x7f80, 0x3f80]),
    });
    expect(Array.from(bf16.data as Uint16Array)).toEqual([0x7fc0, 0x7fc0, 0x7f80, 0x3f80]);
  });

  test("arrays without a NaN to change, integers and canonical f16 NaNs come back as the same object", () => {
    for (const a of [
      { type: "f32", shape: [2], data: new Float32Array([1, Number.POSITIVE_INFINITY]) },
      { type: "i32", shape: [1], data: new Int32Array([-1]) },
      { type: "f16", shape: [1], data: new Uint16Array([0x7e00]) },
    ] as NDArray[]) {
      expect(withCanonicalNaNs(a)).toBe(a);
    }
  });
});

const MODULE = new TextEncoder().encode(`func.func @main(%x: tensor<6xf32>, %y: tensor<3xf64>, %h: tensor<3xf16>)
    -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3xf64>, tensor<3xf16>) {
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<6xf32>
  %relu = stablehlo.maximum %x, %zero : tensor<6xf32>
  %neg = stablehlo.negate %x : tensor<6xf32>
  %sum = stablehlo.add %y, %y : tensor<3xf64>
  %hneg = stablehlo.negate %h : tensor<3xf16>
  return %relu, %neg, %x, %sum, %hneg : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3xf64>, tensor<3xf16>
}`);

describe("the CPU engine's outputs carry one NaN, cold or hot", () => {
  test("3000 runs of NaN-carrying inputs give the same bytes as the first run; arguments keep theirs", async () => {
    const backend = createReactantBackend();
    const exe = await backend.compile({ bytes: MODULE, format: "text" }, {});
    const y = new Float64Array(new Uint32Array([1, 0x7ff80000, 0, 0xfff80000, 0, 0x3ff00000]).buffer);
    const inputs: HostTensor[] = [
      { dtype: "f32", shape: [6], data: f32Bits(...F32_IN) },
      { dtype: "f64", shape: [3], data: y },
      { dtype: "f16", shape: [3], data: new Uint16Array([0x7e01, 0xfe00, 0x3c00]) },
    ];
    const programBytes = backend.memoryStats().inUseBytes; // the program's constants
    const args = await Promise.all(inputs.map((t) => backend.upload(t)));
    const run = async () => {
      const outs = await backend.execute(exe, args);
      const bytes = await Promise.all(
        outs.map(async (o) => Buffer.from(tensorBytes(await backend.download(o))).toString("hex")),
      );
      for (const o of outs) o.dispose();
      return bytes;
    };
    const first = await run();
    for (let i = 1; i < 3000; i++) {
      const again = await run();
      if (again.join() !== first.join()) throw new Error(`run ${i} gave other bytes: ${again} against ${first}`);
    }
    const le32 = (xs: number[]) => Buffer.from(new Uint32Array(xs).buffer).toString("hex");
    expect(first[0]).toBe(le32([F32_NAN, F32_NAN, F32_NAN, 0x3f800000, 0, 0])); // maximum(x, 0)
    expect(first[1]).toBe(le32([F32_NAN, F32_NAN, F32_NAN, 0xbf800000, 0x7f800000, 0])); // negate
    expect(first[2]).toBe(le32([F32_NAN, F32_NAN, F32_NAN, 0x3f800000, 0xff800000, 0x80000000])); // x itself
    expect(first[3]).toBe(le32([0, 0x7ff80000, 0, 0x7ff80000, 0, 0x40000000]));
    expect(first[4]).toBe(Buffer.from(new Uint16Array([0x7e00, 0x7e00, 0xbc00]).buffer).toString("hex"));
    // The argument returned as it is was copied, not rewritten: its buffer still holds the payloads.
    expect(hex(bitsOf32((await backend.download(args[0]!)).data))).toEqual(hex(F32_IN));
    for (const a of args) a.dispose();
    expect(backend.memoryStats().inUseBytes).toBe(programBytes);
    await backend.dispose();
  });
});

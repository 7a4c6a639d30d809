import { describe, expect, test } from "bun:test";
import type { NDArray } from "../src/array.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";
import { argReduceModule } from "./arg-reduce-module.ts";
import { loadExample } from "./helpers/bundles.ts";

function runWith(text: string, args: NDArray[], fuse: boolean): { outputs: NDArray[]; steps: number } {
  const program = new Program(parseModule(text), { fuse });
  const f = program.func(program.entryName());
  return { outputs: f.invoke(args, { arena: new Arena(), failures: [] }) as NDArray[], steps: f.body.steps.length };
}

const bytes = (a: NDArray) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);

describe("elementwise fusion", () => {
  test("a chain with broadcasts becomes one step and keeps every op's rounding", () => {
    const text = `func.func @main(%x: tensor<2x3xf16>, %b: tensor<3xf16>, %k: tensor<2x3xi8>) -> (tensor<2x3xf16>, tensor<2x3xi8>) {
      %0 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf16>) -> tensor<2x3xf16>
      %1 = stablehlo.multiply %x, %0 : tensor<2x3xf16>
      %2 = stablehlo.exponential %1 : tensor<2x3xf16>
      %3 = stablehlo.add %2, %x : tensor<2x3xf16>
      %4 = stablehlo.add %k, %k : tensor<2x3xi8>
      %5 = stablehlo.multiply %4, %k : tensor<2x3xi8>
      return %3, %5 : tensor<2x3xf16>, tensor<2x3xi8>
    }`;
    const x: NDArray = {
      type: "f16",
      shape: [2, 3],
      data: new Uint16Array([0x3c00, 0x4000, 0x4200, 0xbc00, 0x3555, 0x4900]),
    };
    const b: NDArray = { type: "f16", shape: [3], data: new Uint16Array([0x3e00, 0x3800, 0x4500]) };
    const k: NDArray = { type: "i8", shape: [2, 3], data: new Int8Array([100, -100, 7, 64, -64, 1]) };
    const fused = runWith(text, [x, b, k], true);
    const plain = runWith(text, [x, b, k], false);
    expect(fused.steps).toBe(2);
    expect(plain.steps).toBe(6);
    fused.outputs.forEach((o, i) => {
      expect(bytes(o)).toEqual(bytes(plain.outputs[i] as NDArray));
    });
    expect(Array.from(fused.outputs[1]?.data as Int8Array)).toEqual([32, 32, 98, 0, 0, 2]);
  });

  test("a reducer's fused region, run on a new row count per level, answers as unfused on each call", () => {
    // argmax over 200 values: the region runs on 100, 50, 25, 13... rows, one shape per level.
    // The rule written so the engine does not take it for its arg-max loop: the region runs.
    const text = argReduceModule("GT", true, 2, 200);
    const program = new Program(parseModule(text), { fuse: true });
    const f = program.func(program.entryName());
    const arena = new Arena();
    for (const peak of [17, 150, 3, 199]) {
      const data = new Float32Array(400).map((_, i) => Math.sin(i) * 0.5);
      data[peak] = 2;
      data[200 + ((peak * 7) % 200)] = 3;
      const x: NDArray = { type: "f32", shape: [2, 200], data };
      const fused = f.invoke([x], { arena, failures: [] }) as NDArray[];
      const plain = runWith(text, [x], false).outputs;
      expect(Array.from(fused[1]?.data as Int32Array)).toEqual([peak, (peak * 7) % 200]);
      fused.forEach((o, i) => {
        expect(bytes(o)).toEqual(bytes(plain[i] as NDArray));
      });
    }
  });

  test("calls are inlined, so a chain fuses across them", () => {
    const text = `func.func @main(%x: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.add %x, %b : tensor<4xf32>
      %1 = call @relu(%0) : (tensor<4xf32>) -> tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    func.func private @relu(%a: tensor<4xf32>) -> tensor<4xf32> {
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %z = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %r = stablehlo.maximum %a, %z : tensor<4xf32>
      return %r : tensor<4xf32>
    }`;
    const x: NDArray = { type: "f32", shape: [4], data: new Float32Array([-2, -0.5, 0.5, 2]) };
    const b: NDArray = { type: "f32", shape: [4], data: new Float32Array([1, 1, 1, 1]) };
    const fused = runWith(text, [x, b], true);
    expect(fused.steps).toBe(1);
    expect(Array.from(fused.outputs[0]?.data as Float32Array)).toEqual([0, 0.5, 1.5, 3]);
  });

  test("a folded broadcast of one value is read as a literal and keeps the unfused bytes", () => {
    // The zeros (and the -0.0 and 2.0 splats) fold into 64-element constants; the fused loop
    // writes their value into its code (max(x, 0) becomes the branch-free ReLU).
    const T = "tensor<64xf32>";
    const text = `func.func @main(%x: ${T}) -> (${T}, ${T}) {
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %z = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> ${T}
      %negzero = stablehlo.constant dense<-0.0> : tensor<f32>
      %nz = stablehlo.broadcast_in_dim %negzero, dims = [] : (tensor<f32>) -> ${T}
      %two = stablehlo.constant dense<2.0> : ${T}
      %0 = stablehlo.multiply %x, %two : ${T}
      %1 = stablehlo.maximum %0, %z : ${T}
      %2 = stablehlo.add %x, %two : ${T}
      %3 = stablehlo.minimum %2, %nz : ${T}
      return %1, %3 : ${T}, ${T}
    }`;
    const values = [0, -0, 1, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-45, -2, -3];
    const x: NDArray = { type: "f32", shape: [64], data: new Float32Array(64).map((_, i) => values[i % 10] as number) };
    const fused = runWith(text, [x], true);
    const plain = runWith(text, [x], false);
    expect(fused.steps).toBe(2);
    fused.outputs.forEach((o, i) => {
      const p = plain.outputs[i] as NDArray;
      for (let j = 0; j < 64; j++) {
        const a = o.data[j] as number;
        const b = p.data[j] as number;
        expect(Number.isNaN(a) ? Number.isNaN(b) : Object.is(a, b)).toBe(true);
      }
    });
  });

  test("the fused ReLU is max(x, +0) exactly, NaN canonical, the same bytes in every JIT tier", () => {
    const T = "tensor<64xf32>";
    const text = `func.func @main(%x: ${T}, %y: ${T}) -> ${T} {
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %z = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> ${T}
      %0 = stablehlo.add %x, %y : ${T}
      %1 = stablehlo.maximum %0, %z : ${T}
      return %1 : ${T}
    }`;
    // NaNs with a sign and a payload, infinities, signed zeros, subnormals, the largest floats.
    const words = [
      0xffc00001, 0x7fc00005, 0xff800000, 0x7f800000, 0x80000000, 0, 1, 0x80000001, 0x7f7fffff, 0xff7fffff,
    ];
    const xs = new Uint32Array(64).map((_, i) => (i < 40 ? (words[i % words.length] as number) : 0x3f800000 + i * 977));
    const x = new Float32Array(xs.buffer);
    // inf + -inf makes a NaN in the add; -3 and 0.5 move some values across zero.
    const y = new Float32Array(64).map((_, i) => (i % 7 === 3 ? -3 : 0.5));
    y[3] = Number.NEGATIVE_INFINITY;
    const program = new Program(parseModule(text), { fuse: true });
    const f = program.func(program.entryName());
    expect(f.body.steps.length).toBe(1);
    const args: NDArray[] = [
      { type: "f32", shape: [64], data: x },
      { type: "f32", shape: [64], data: y },
    ];
    // Math.max's value, with every NaN as the canonical quiet NaN.
    const expected = new Uint32Array(64);
    const one = new Float32Array(1);
    for (let i = 0; i < 64; i++) {
      one[0] = Math.max(Math.fround((x[i] as number) + (y[i] as number)), 0);
      expected[i] = Number.isNaN(one[0]) ? 0x7fc00000 : (new Uint32Array(one.buffer)[0] as number);
    }
    const expectedBytes = new Uint8Array(expected.buffer);
    // Enough runs for the generated loop to reach the optimising tiers, where a NaN kept in a
    // register could otherwise come out with its own sign and payload.
    for (let run = 0; run < 5000; run++) {
      const out = f.invoke(args, { arena: new Arena(), failures: [] })[0] as NDArray;
      if (run % 1000 === 0 || run === 4999) expect(bytes(out)).toEqual(expectedBytes);
    }
  });

  test("slices feeding a chain are read in place, with the unfused bytes", () => {
    // Gates as column blocks of one matrix (contiguous rows at an offset and pitch), a strided
    // slice and a slice of a middle axis (the odometer path), and a slice read twice (kept).
    const text = `func.func @main(%x: tensor<2x3x8xf32>, %y: tensor<2x3x2xf32>) -> (tensor<2x3x2xf32>, tensor<2x1x8xf32>, tensor<2x3x2xf32>) {
      %a = stablehlo.slice %x [0:2, 0:3, 0:2] : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
      %b = stablehlo.slice %x [0:2, 0:3, 4:6] : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
      %c = stablehlo.slice %x [0:2, 0:3, 1:8:4] : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
      %na = stablehlo.negate %a : tensor<2x3x2xf32>
      %e = stablehlo.exponential %na : tensor<2x3x2xf32>
      %t = stablehlo.tanh %b : tensor<2x3x2xf32>
      %m = stablehlo.multiply %e, %t : tensor<2x3x2xf32>
      %s = stablehlo.add %m, %c : tensor<2x3x2xf32>
      %r = stablehlo.add %s, %y : tensor<2x3x2xf32>
      %mid = stablehlo.slice %x [0:2, 1:2, 0:8] : (tensor<2x3x8xf32>) -> tensor<2x1x8xf32>
      %sq = stablehlo.multiply %mid, %mid : tensor<2x1x8xf32>
      %d = stablehlo.slice %x [0:2, 0:3, 6:8] : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
      %u = stablehlo.subtract %d, %y : tensor<2x3x2xf32>
      return %r, %sq, %u : tensor<2x3x2xf32>, tensor<2x1x8xf32>, tensor<2x3x2xf32>
    }`;
    const x: NDArray = {
      type: "f32",
      shape: [2, 3, 8],
      data: Float32Array.from({ length: 48 }, (_, i) => Math.sin(i) * 3),
    };
    const y: NDArray = { type: "f32", shape: [2, 3, 2], data: Float32Array.from({ length: 12 }, (_, i) => i / 7 - 1) };
    const fused = runWith(text, [x, y], true);
    const plain = runWith(text, [x, y], false);
    // Every slice but the one read twice joins a loop: three loops, and %mid's multiply reads it twice.
    expect(fused.steps).toBe(4);
    fused.outputs.forEach((o, i) => {
      expect(o.shape).toEqual(plain.outputs[i]?.shape as number[]);
      expect(bytes(o)).toEqual(bytes(plain.outputs[i] as NDArray));
    });
    // A value checked by hand: %u[1, 2, 1] = x[1, 2, 7] - y[1, 2, 1].
    expect(((fused.outputs[2] as NDArray).data as Float32Array)[11]).toBe(
      Math.fround((x.data[47] as number) - (y.data[11] as number)),
    );
  });

  for (const model of ["cnn", "transformer"]) {
    test(`${model}: fused and unfused plans give byte-identical outputs`, () => {
      const c = loadExample(model, 1);
      const fused = runWith(c.mlir, c.args, true);
      const plain = runWith(c.mlir, c.args, false);
      expect(fused.steps).toBeLessThan(plain.steps);
      fused.outputs.forEach((o, i) => {
        expect(bytes(o)).toEqual(bytes(plain.outputs[i] as NDArray));
      });
    });
  }
});

import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/**
 * broadcast_in_dim of a one-element operand fills the result with that value (registry.ts): every
 * element of every element type's storage, in pooled storage that held other values before.
 */
describe("broadcast_in_dim of one value", () => {
  const main = (type: string, shape: string) => `func.func @main(%x: tensor<${type}>) -> tensor<${shape}x${type}> {
    %b = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<${type}>) -> tensor<${shape}x${type}>
    return %b : tensor<${shape}x${type}>
  }`;

  test("every element holds the value, for numbers, bigints, half bits and booleans", () => {
    const cases: [string, NDArray, number | bigint][] = [
      ["f32", { type: "f32", shape: [], data: Float32Array.of(-2.5) }, -2.5],
      ["i64", { type: "i64", shape: [], data: BigInt64Array.of(-7n) }, -7n],
      ["bf16", { type: "bf16", shape: [], data: Uint16Array.of(0x3fc0) }, 0x3fc0],
      ["i1", { type: "i1", shape: [], data: Uint8Array.of(1) }, 1],
    ];
    for (const [type, x, want] of cases) {
      const program = new Program(parseModule(main(type, "3x5"), "b.mlir"));
      const arena = new Arena({ pool: true });
      for (let run = 0; run < 3; run++) {
        const b = (program.func("main").invoke([x], { arena, failures: [] }) as NDArray[])[0] as NDArray;
        expect(b.shape).toEqual([3, 5]);
        expect(Array.from(b.data as ArrayLike<number | bigint>)).toEqual(new Array(15).fill(want));
        // Scribbled over and given back: the next run's fill must not see these values.
        (b.data as unknown as { fill(v: number | bigint): void }).fill(typeof want === "bigint" ? 99n : 9);
        arena.release(b.data);
        arena.flush();
      }
    }
  });

  test("a one-element operand of rank 1 fills too, and a complex value keeps both parts", () => {
    const one = `func.func @main(%x: tensor<1xf32>, %z: tensor<complex<f32>>) -> (tensor<2x1x3xf32>, tensor<2xcomplex<f32>>) {
      %b = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<1xf32>) -> tensor<2x1x3xf32>
      %c = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<complex<f32>>) -> tensor<2xcomplex<f32>>
      return %b, %c : tensor<2x1x3xf32>, tensor<2xcomplex<f32>>
    }`;
    const program = new Program(parseModule(one, "b.mlir"));
    const [b, c] = program.func("main").invoke(
      [
        { type: "f32", shape: [1], data: Float32Array.of(4) },
        { type: "c64", shape: [], data: Float32Array.of(1, -3) },
      ],
      { arena: new Arena({ pool: true }), failures: [] },
    ) as NDArray[];
    expect(Array.from(b?.data as Float32Array)).toEqual([4, 4, 4, 4, 4, 4]);
    expect(Array.from(c?.data as Float32Array)).toEqual([1, -3, 1, -3]);
  });
});

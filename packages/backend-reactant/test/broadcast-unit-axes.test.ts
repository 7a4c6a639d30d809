import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { insertsUnitAxes } from "../src/kernels/layout.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/** broadcast_in_dim that only adds size-1 axes is a reshape: same elements, shared storage. */
describe("broadcast_in_dim adding unit axes", () => {
  test("recognised only where the operand's axes keep their order and sizes", () => {
    expect(insertsUnitAxes([2, 3], [0, 2], [2, 1, 3])).toBe(true);
    expect(insertsUnitAxes([2, 3], [1, 2], [1, 2, 3])).toBe(true);
    expect(insertsUnitAxes([], [], [1, 1])).toBe(true);
    expect(insertsUnitAxes([2, 3], [1, 0], [3, 2])).toBe(false);
    expect(insertsUnitAxes([2, 1], [0, 1], [2, 4])).toBe(false);
    expect(insertsUnitAxes([2, 3], [0, 1], [2, 3, 4])).toBe(false);
  });

  test("the results equal the copying broadcast's, and an update of the result leaves the operand alone", () => {
    const text = `func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x1x3xf32>, tensor<2x3x2xf32>, tensor<2x3xf32>, tensor<2x1x3xf32>) {
      %y = stablehlo.add %x, %x : tensor<2x3xf32>
      %a = stablehlo.broadcast_in_dim %y, dims = [0, 2] : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
      %b = stablehlo.broadcast_in_dim %y, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x2xf32>
      %u = stablehlo.constant dense<9.0> : tensor<1x1x1xf32>
      %i = stablehlo.constant dense<0> : tensor<i32>
      %c = stablehlo.broadcast_in_dim %y, dims = [0, 2] : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
      %d = stablehlo.dynamic_update_slice %c, %u, %i, %i, %i : (tensor<2x1x3xf32>, tensor<1x1x1xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x1x3xf32>
      return %a, %b, %y, %d : tensor<2x1x3xf32>, tensor<2x3x2xf32>, tensor<2x3xf32>, tensor<2x1x3xf32>
    }`;
    const x: NDArray = { type: "f32", shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) };
    const program = new Program(parseModule(text, "b.mlir"), { fuse: false });
    const [a, b, y, d] = program
      .func("main")
      .invoke([x], { arena: new Arena({ pool: true }), failures: [] }) as NDArray[];
    expect(a?.shape).toEqual([2, 1, 3]);
    expect(Array.from(a?.data as Float32Array)).toEqual([2, 4, 6, 8, 10, 12]);
    expect(Array.from(b?.data as Float32Array)).toEqual([2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12]);
    expect(Array.from(y?.data as Float32Array)).toEqual([2, 4, 6, 8, 10, 12]);
    expect(Array.from(d?.data as Float32Array)).toEqual([9, 4, 6, 8, 10, 12]);
  });
});

import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { type OpTime, Program } from "../src/plan/program.ts";
import { WHILE_I_BELOW_N, scalarLoop } from "./helpers/loops.ts";

/**
 * while loops run by generated block functions with scalar conditions evaluated on numbers
 * (kernels/while-loop.ts): results must be what stepping the blocks one op at a time gives
 * (the profiled path), with or without fusion, and on every run of the plan.
 */

type Run = (args: NDArray[]) => NDArray[];

function runs(text: string): { direct: Run; profiled: Run; unfused: Run } {
  const make = (fuse: boolean, profile?: Map<string, OpTime>): Run => {
    const program = new Program(parseModule(text, "loop.mlir"), { fuse });
    const arena = new Arena({ pool: true });
    return (args) => program.func("main").invoke(args, { arena, failures: [], profile }) as NDArray[];
  };
  return { direct: make(true), profiled: make(true, new Map()), unfused: make(false) };
}

const f32 = (shape: number[], values: number[]): NDArray => ({ type: "f32", shape, data: Float32Array.from(values) });
const i32 = (v: number): NDArray => ({ type: "i32", shape: [], data: Int32Array.of(v) });
const values = (a: NDArray | undefined): number[] => Array.from(a?.data as Float32Array);

/** Each way of running gives `expected`, three runs in a row (pooled buffers reused). */
function expectAll(text: string, args: () => NDArray[], expected: number[][]): void {
  for (const run of Object.values(runs(text))) {
    for (let k = 0; k < 3; k++) expect(run(args()).map(values)).toEqual(expected);
  }
}

describe("while loops", () => {
  test("a carried buffer read after its update in the same iteration keeps its old value there", () => {
    // Each iteration writes row i, then sums the buffer as it was before the write: updating in
    // place would let the sum see the new row.
    const text = `func.func @main(%init: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<f32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<4> : tensor<i32>
  %fz = stablehlo.constant dense<0.0> : tensor<f32>
  %buf0 = stablehlo.add %init, %init : tensor<4x2xf32>
  %r:3 = stablehlo.while(%i = %zero, %buf = %buf0, %acc = %fz) : tensor<i32>, tensor<4x2xf32>, tensor<f32>
  ${WHILE_I_BELOW_N}
    %next = stablehlo.add %i, %one : tensor<i32>
    %v = stablehlo.convert %next : (tensor<i32>) -> tensor<f32>
    %row = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
    %upd = stablehlo.dynamic_update_slice %buf, %row, %i, %zero : (tensor<4x2xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<4x2xf32>
    %old = stablehlo.reduce(%buf init: %fz) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x2xf32>, tensor<f32>) -> tensor<f32>
    %acc2 = stablehlo.add %acc, %old : tensor<f32>
    stablehlo.return %next, %upd, %acc2 : tensor<i32>, tensor<4x2xf32>, tensor<f32>
  }
  return %r#1, %r#2 : tensor<4x2xf32>, tensor<f32>
}`;
    // Rows start at 10, 12, 14, 16 (doubled inputs), row i becomes i+1 at iteration i.
    const sums: number[] = [];
    const rows = [10, 12, 14, 16];
    for (let i = 0; i < 4; i++) {
      sums.push(2 * rows.reduce((a, b) => a + b, 0));
      rows[i] = i + 1;
    }
    const init = () => [f32([4, 2], [5, 5, 6, 6, 7, 7, 8, 8])];
    expectAll(text, init, [[1, 1, 2, 2, 3, 3, 4, 4], [sums.reduce((a, b) => a + b, 0)]]);
  });

  test("a carried buffer that is also returned unchanged is not written by the updates", () => {
    const text = `func.func @main(%init: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %start = stablehlo.multiply %init, %init : tensor<3xf32>
  %r:3 = stablehlo.while(%i = %zero, %buf = %start, %keep = %start) : tensor<i32>, tensor<3xf32>, tensor<3xf32>
  ${WHILE_I_BELOW_N}
    %next = stablehlo.add %i, %one : tensor<i32>
    %v = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %row = stablehlo.reshape %v : (tensor<f32>) -> tensor<1xf32>
    %upd = stablehlo.dynamic_update_slice %buf, %row, %i : (tensor<3xf32>, tensor<1xf32>, tensor<i32>) -> tensor<3xf32>
    stablehlo.return %next, %upd, %keep : tensor<i32>, tensor<3xf32>, tensor<3xf32>
  }
  return %r#1, %r#2 : tensor<3xf32>, tensor<3xf32>
}`;
    expectAll(text, () => [f32([3], [5, 6, 7])], [
      [0, 1, 2],
      [25, 36, 49],
    ]);
  });

  // Per case: element type, start value, the condition's ops (on %x) and what the loop ends at.
  const conditionCases: [string, string, string, string, string, number][] = [
    // x < 10.5 from 0 by 1.5.
    ["f32", "0.0", "1.5", "%b = stablehlo.constant dense<10.5> : tensor<f32>", "LT, %x, %b, FLOAT", 10.5],
    // NaN != NaN: a NaN start runs the body once, which sets x to 1.
    ["f32", "0x7FC00000", "1.0", "", "NE, %x, %x, FLOAT", Number.NaN],
    // A 64-bit counter past 2^32.
    [
      "i64",
      "4294967294",
      "1",
      "%b = stablehlo.constant dense<4294967299> : tensor<i64>",
      "LT, %x, %b, SIGNED",
      4294967299,
    ],
    // 0xFFFFFFF0 as ui32 is large: x < 5 is false at once.
    ["ui32", "4294967280", "1", "%b = stablehlo.constant dense<5> : tensor<ui32>", "LT, %x, %b, UNSIGNED", 4294967280],
  ];
  for (const [type, init, step, bound, compare, end] of conditionCases) {
    test(`a scalar condition on ${type} (${compare}) from ${init} stops where stepping the ops does`, () => {
      const text = `func.func @main() -> tensor<${type}> {
  %init = stablehlo.constant dense<${init}> : tensor<${type}>
  %r = stablehlo.while(%x = %init) : tensor<${type}>
  cond {
    ${bound}
    %c = stablehlo.compare ${compare} : (tensor<${type}>, tensor<${type}>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %d = stablehlo.constant dense<${step}> : tensor<${type}>
    %y = stablehlo.${Number.isNaN(end) ? "maximum %d, %d" : "add %x, %d"} : tensor<${type}>
    stablehlo.return %y : tensor<${type}>
  }
  return %r : tensor<${type}>
}`;
      for (const run of Object.values(runs(text))) {
        const got = Number((run([])[0] as NDArray).data[0] as number | bigint);
        expect(got).toBe(Number.isNaN(end) ? 1 : end);
      }
    });
  }

  test("a condition of and / not over compares stops at the first false", () => {
    // (x < 20) and not (x == 7), counting up by 1 from 0: stops at 7.
    const text = scalarLoop(
      "i32",
      `%b = stablehlo.constant dense<20> : tensor<i32>
    %s = stablehlo.constant dense<7> : tensor<i32>
    %lt = stablehlo.compare LT, %x, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %x, %s, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %ne = stablehlo.not %eq : tensor<i1>
    %c = stablehlo.and %lt, %ne : tensor<i1>
    stablehlo.return %c : tensor<i1>`,
      `%d = stablehlo.constant dense<1> : tensor<i32>
    %y = stablehlo.add %x, %d : tensor<i32>
    stablehlo.return %y : tensor<i32>`,
    );
    for (const run of Object.values(runs(text))) {
      expect(Array.from((run([i32(0)])[0] as NDArray).data as Int32Array)).toEqual([7]);
      expect(Array.from((run([i32(9)])[0] as NDArray).data as Int32Array)).toEqual([20]);
    }
  });

  test("a condition over a tensor (not a scalar compare) still runs as a block", () => {
    // Doubles x while its sum is below 100.
    const text = scalarLoop(
      "2xf32",
      `%z = stablehlo.constant dense<0.0> : tensor<f32>
    %lim = stablehlo.constant dense<100.0> : tensor<f32>
    %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %c = stablehlo.compare LT, %s, %lim, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>`,
      `%y = stablehlo.add %x, %x : tensor<2xf32>
    stablehlo.return %y : tensor<2xf32>`,
    );
    expectAll(text, () => [f32([2], [1, 2])], [[64, 128]]);
  });

  test("a loop counter passed in by the caller is compared as given", () => {
    const text = `func.func @main(%n: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
  ${WHILE_I_BELOW_N}
    %y = stablehlo.add %i, %three : tensor<i32>
    stablehlo.return %y : tensor<i32>
  }
  return %r : tensor<i32>
}`;
    for (const run of Object.values(runs(text))) {
      expect(Array.from((run([i32(10)])[0] as NDArray).data as Int32Array)).toEqual([12]);
      expect(Array.from((run([i32(-4)])[0] as NDArray).data as Int32Array)).toEqual([0]);
    }
  });
});

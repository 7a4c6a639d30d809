import { describe, expect, test } from "bun:test";
import { encodeBf16, encodeF16 } from "@xlaserve/stablehlo/float16.ts";
import type { NDArray } from "../src/array.ts";
import { run, runOp, values } from "./helpers/run.ts";

describe("integer semantics", () => {
  test("wrap-around on add and multiply", () => {
    const r = runOp(
      ["dense<[127, -128, 100]> : tensor<3xi8>", "dense<[1, -1, 3]> : tensor<3xi8>"],
      "stablehlo.add %a, %b : tensor<3xi8>",
      "tensor<3xi8>",
    );
    expect(values(r)).toEqual([-128, 127, 103]);
    const m = runOp(
      ["dense<[2147483647, 65536]> : tensor<2xi32>", "dense<[2, 65536]> : tensor<2xi32>"],
      "stablehlo.multiply %a, %b : tensor<2xi32>",
      "tensor<2xi32>",
    );
    expect(values(m)).toEqual([-2, 0]);
    const u = runOp(
      ["dense<[4294967295]> : tensor<1xui32>", "dense<[4294967295]> : tensor<1xui32>"],
      "stablehlo.multiply %a, %b : tensor<1xui32>",
      "tensor<1xui32>",
    );
    expect(values(u)).toEqual([1]);
  });

  test("division by zero and INT_MIN / -1 as the spec says", () => {
    const d = runOp(
      ["dense<[7, -7, -2147483648, 5]> : tensor<4xi32>", "dense<[0, 0, -1, -2]> : tensor<4xi32>"],
      "stablehlo.divide %a, %b : tensor<4xi32>",
      "tensor<4xi32>",
    );
    expect(values(d)).toEqual([-1, -1, -2147483648, -2]);
    const r = runOp(
      ["dense<[7, -7, -2147483648, 5]> : tensor<4xi32>", "dense<[0, 0, -1, -2]> : tensor<4xi32>"],
      "stablehlo.remainder %a, %b : tensor<4xi32>",
      "tensor<4xi32>",
    );
    expect(values(r)).toEqual([7, -7, 0, 1]);
    const u = runOp(
      ["dense<[9]> : tensor<1xui8>", "dense<[0]> : tensor<1xui8>"],
      "stablehlo.divide %a, %b : tensor<1xui8>",
      "tensor<1xui8>",
    );
    expect(values(u)).toEqual([255]);
    const big = runOp(
      ["dense<[-9223372036854775808, 5]> : tensor<2xi64>", "dense<[-1, 0]> : tensor<2xi64>"],
      "stablehlo.divide %a, %b : tensor<2xi64>",
      "tensor<2xi64>",
    );
    expect(values(big)).toEqual([-9223372036854775808n, -1n]);
  });

  test("shifts past the width", () => {
    const consts = ["dense<[-16, -16, 1, 1]> : tensor<4xi8>", "dense<[2, 8, 7, 200]> : tensor<4xi8>"];
    expect(values(runOp(consts, "stablehlo.shift_left %a, %b : tensor<4xi8>", "tensor<4xi8>"))).toEqual([
      -64, 0, -128, 0,
    ]);
    expect(values(runOp(consts, "stablehlo.shift_right_arithmetic %a, %b : tensor<4xi8>", "tensor<4xi8>"))).toEqual([
      -4, -1, 0, 0,
    ]);
    expect(values(runOp(consts, "stablehlo.shift_right_logical %a, %b : tensor<4xi8>", "tensor<4xi8>"))).toEqual([
      60, 0, 0, 0,
    ]);
    const big = runOp(
      ["dense<[-1, 1]> : tensor<2xi64>", "dense<[63, 64]> : tensor<2xi64>"],
      "stablehlo.shift_right_logical %a, %b : tensor<2xi64>",
      "tensor<2xi64>",
    );
    expect(values(big)).toEqual([1n, 0n]);
  });

  test("sub-byte integers wrap in their width", () => {
    const r = runOp(
      ["dense<[7, -8]> : tensor<2xi4>", "dense<[1, -1]> : tensor<2xi4>"],
      "stablehlo.add %a, %b : tensor<2xi4>",
      "tensor<2xi4>",
    );
    expect(values(r)).toEqual([-8, 7]);
  });

  test("popcnt and count_leading_zeros per width", () => {
    expect(
      values(runOp(["dense<[-1, 1, 0]> : tensor<3xi16>"], "stablehlo.popcnt %a : tensor<3xi16>", "tensor<3xi16>")),
    ).toEqual([16, 1, 0]);
    expect(
      values(
        runOp(
          ["dense<[-1, 1, 0]> : tensor<3xi16>"],
          "stablehlo.count_leading_zeros %a : tensor<3xi16>",
          "tensor<3xi16>",
        ),
      ),
    ).toEqual([0, 15, 16]);
  });
});

describe("float semantics", () => {
  test("NaN propagates through maximum and minimum; signed zeros order", () => {
    const consts = ["dense<[0x7FC00000, 1.0, -0.0]> : tensor<3xf32>", "dense<[1.0, 0x7FC00000, 0.0]> : tensor<3xf32>"];
    const mx = values(runOp(consts, "stablehlo.maximum %a, %b : tensor<3xf32>", "tensor<3xf32>")) as number[];
    expect(Number.isNaN(mx[0])).toBe(true);
    expect(Number.isNaN(mx[1])).toBe(true);
    expect(Object.is(mx[2], 0)).toBe(true);
    const mn = values(runOp(consts, "stablehlo.minimum %a, %b : tensor<3xf32>", "tensor<3xf32>")) as number[];
    expect(Object.is(mn[2], -0)).toBe(true);
  });

  test("f16 and bf16 round to nearest even after each op", () => {
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in f16: it rounds to the even 1.
    const f16 = runOp(
      ["dense<1.0> : tensor<f16>", "dense<4.8828125E-4> : tensor<f16>"],
      "stablehlo.add %a, %b : tensor<f16>",
      "tensor<f16>",
    );
    expect(values(f16)).toEqual([encodeF16(1)]);
    const bf = runOp(
      ["dense<3.0> : tensor<bf16>", "dense<7.0> : tensor<bf16>"],
      "stablehlo.divide %a, %b : tensor<bf16>",
      "tensor<bf16>",
    );
    expect(values(bf)).toEqual([encodeBf16(3 / 7)]);
    const over = runOp(["dense<60000.0> : tensor<f16>"], "stablehlo.add %a, %a : tensor<f16>", "tensor<f16>");
    expect(values(over)).toEqual([0x7c00]);
  });

  test("compare with TOTALORDER orders -NaN < -Inf < -0 < +0 < NaN", () => {
    const r = runOp(
      [
        "dense<[0xFFC00000, -0.0, 0x7FC00000, 1.0]> : tensor<4xf32>",
        "dense<[0xFF800000, 0.0, 0x7F800000, 1.0]> : tensor<4xf32>",
      ],
      "stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>",
      "tensor<4xi1>",
    );
    expect(values(r)).toEqual([1, 1, 0, 0]);
    const eq = runOp(
      ["dense<[0x7FC00000, -0.0]> : tensor<2xf32>", "dense<[0x7FC00000, 0.0]> : tensor<2xf32>"],
      "stablehlo.compare EQ, %a, %b, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>",
      "tensor<2xi1>",
    );
    expect(values(eq)).toEqual([0, 1]);
  });

  test("convert float -> int truncates, saturates, maps NaN to 0", () => {
    const r = runOp(
      ["dense<[-1.7, 300.0, -300.0, 0x7FC00000, 1.0e10]> : tensor<5xf32>"],
      "stablehlo.convert %a : (tensor<5xf32>) -> tensor<5xi8>",
      "tensor<5xi8>",
    );
    expect(values(r)).toEqual([-1, 127, -128, 0, 127]);
    const u = runOp(
      ["dense<[-5.0, 1.0e30]> : tensor<2xf64>"],
      "stablehlo.convert %a : (tensor<2xf64>) -> tensor<2xui64>",
      "tensor<2xui64>",
    );
    expect(values(u)).toEqual([0n, 18446744073709551615n]);
  });

  test("round_nearest_even and round_nearest_afz", () => {
    const c = ["dense<[0.5, 1.5, 2.5, -2.5]> : tensor<4xf32>"];
    expect(values(runOp(c, "stablehlo.round_nearest_even %a : tensor<4xf32>", "tensor<4xf32>"))).toEqual([0, 2, 2, -2]);
    expect(values(runOp(c, "stablehlo.round_nearest_afz %a : tensor<4xf32>", "tensor<4xf32>"))).toEqual([1, 2, 3, -3]);
  });

  test("complex multiply and abs", () => {
    const m = runOp(
      ["dense<[(1.0, 2.0)]> : tensor<1xcomplex<f64>>", "dense<[(3.0, -1.0)]> : tensor<1xcomplex<f64>>"],
      "stablehlo.multiply %a, %b : tensor<1xcomplex<f64>>",
      "tensor<1xcomplex<f64>>",
    );
    expect(values(m)).toEqual([5, 5]);
    const a = runOp(
      ["dense<[(3.0, 4.0)]> : tensor<1xcomplex<f32>>"],
      "stablehlo.abs %a : (tensor<1xcomplex<f32>>) -> tensor<1xf32>",
      "tensor<1xf32>",
    );
    expect(values(a)).toEqual([5]);
  });
});

describe("data movement", () => {
  test("pad with negative low and interior padding", () => {
    const r = runOp(
      ["dense<[1, 2, 3]> : tensor<3xi32>", "dense<0> : tensor<i32>"],
      "stablehlo.pad %a, %b, low = [-1], high = [2], interior = [1] : (tensor<3xi32>, tensor<i32>) -> tensor<6xi32>",
      "tensor<6xi32>",
    );
    expect(values(r)).toEqual([0, 2, 0, 3, 0, 0]);
  });

  test("dynamic_slice clamps its start into range", () => {
    const r = runOp(
      ["dense<[0, 1, 2, 3, 4]> : tensor<5xi32>", "dense<4> : tensor<i64>"],
      "stablehlo.dynamic_slice %a, %b, sizes = [2] : (tensor<5xi32>, tensor<i64>) -> tensor<2xi32>",
      "tensor<2xi32>",
    );
    expect(values(r)).toEqual([3, 4]);
  });

  test("transpose, reverse, broadcast_in_dim, concatenate", () => {
    const t = runOp(
      ["dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>"],
      "stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>",
      "tensor<3x2xi32>",
    );
    expect(values(t)).toEqual([1, 4, 2, 5, 3, 6]);
    const rv = runOp(
      ["dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>"],
      "stablehlo.reverse %a, dims = [1] : tensor<2x3xi32>",
      "tensor<2x3xi32>",
    );
    expect(values(rv)).toEqual([3, 2, 1, 6, 5, 4]);
    const b = runOp(
      ["dense<[1, 2]> : tensor<2xi32>"],
      "stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<2xi32>) -> tensor<2x3xi32>",
      "tensor<2x3xi32>",
    );
    expect(values(b)).toEqual([1, 1, 1, 2, 2, 2]);
    const c = runOp(
      ["dense<[[1], [2]]> : tensor<2x1xi32>", "dense<[[3, 4], [5, 6]]> : tensor<2x2xi32>"],
      "stablehlo.concatenate %a, %b, dim = 1 : (tensor<2x1xi32>, tensor<2x2xi32>) -> tensor<2x3xi32>",
      "tensor<2x3xi32>",
    );
    expect(values(c)).toEqual([1, 3, 4, 2, 5, 6]);
  });
});

describe("regions and control flow", () => {
  test("reduce with a two-operand argmax region", () => {
    const r = runOp(
      [
        "dense<[3.0, 9.0, 9.0, 1.0]> : tensor<4xf32>",
        "dense<[0, 1, 2, 3]> : tensor<4xi32>",
        "dense<0xFF800000> : tensor<f32>",
        "dense<0> : tensor<i32>",
      ],
      `stablehlo.reduce(%a init: %c), (%b init: %d) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
       reducer(%x: tensor<f32>, %y: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>) {
        %gt = stablehlo.compare GT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %eq = stablehlo.compare EQ, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %lt = stablehlo.compare LT, %i, %j : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %tie = stablehlo.and %eq, %lt : tensor<i1>
        %pick = stablehlo.or %gt, %tie : tensor<i1>
        %v = stablehlo.select %pick, %x, %y : tensor<i1>, tensor<f32>
        %k = stablehlo.select %pick, %i, %j : tensor<i1>, tensor<i32>
        stablehlo.return %v, %k : tensor<f32>, tensor<i32>
      }`.replace("%r = ", ""),
      "tensor<f32>",
    );
    expect(values(r)).toEqual([9]);
  });

  test("while loop sums 1..10", () => {
    const r = runOp(
      ["dense<0> : tensor<i64>", "dense<10> : tensor<i64>", "dense<1> : tensor<i64>"],
      `stablehlo.while(%i = %a, %s = %a) : tensor<i64>, tensor<i64>
      cond {
        %p = stablehlo.compare LT, %i, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      } do {
        %n = stablehlo.add %i, %c : tensor<i64>
        %t = stablehlo.add %s, %n : tensor<i64>
        stablehlo.return %n, %t : tensor<i64>, tensor<i64>
      }`,
      "tensor<i64>",
    );
    expect(values(r)).toEqual([10n]);
  });

  test("reduce with add over f32 accumulates in f32, in index order", () => {
    const r = runOp(
      ["dense<[16777216.0, 1.0, 1.0, 1.0]> : tensor<4xf32>", "dense<0.0> : tensor<f32>"],
      "stablehlo.reduce(%a init: %b) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>",
      "tensor<f32>",
    );
    expect(values(r)).toEqual([16777216]);
  });
});

describe("rng_bit_generator", () => {
  test("THREE_FRY with 64-bit outputs matches XLA (state [3, 3])", () => {
    const text = `func.func @main() -> (tensor<2xui64>, tensor<ui64>) {
      %s = stablehlo.constant dense<3> : tensor<2xui64>
      %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<ui64>)
      return %state, %bits : tensor<2xui64>, tensor<ui64>
    }`;
    const [state, bits] = run(text);
    expect(values(state as NDArray)).toEqual([3n, 4n]);
    expect(values(bits as NDArray)).toEqual([3349939604322698703n]);
  });

  test("THREE_FRY with 32-bit outputs lays the word pairs out as XLA does", () => {
    // key words (1, 2), counter 4 | 3 << 32: the published vector for XLA's layout
    const key = 1n | (2n << 32n);
    const counter = 4n | (3n << 32n);
    const text = `func.func @main() -> (tensor<2xui64>, tensor<8xi32>) {
      %s = stablehlo.constant dense<[${key}, ${counter}]> : tensor<2xui64>
      %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8xi32>)
      return %state, %bits : tensor<2xui64>, tensor<8xi32>
    }`;
    const [state, bits] = run(text);
    expect(values(bits as NDArray)).toEqual([
      -1997982863, -261361928, -1008514867, 1226850200, 1419974734, -277475325, 1033030661, -1926332264,
    ]);
    expect(values(state as NDArray)).toEqual([key, counter + 4n]);
  });
});

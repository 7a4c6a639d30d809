import { describe, expect, test } from "bun:test";
import { SignatureSyntaxError, parseMainSignature } from "../src/index.ts";

describe("parseMainSignature", () => {
  test("reads types past names, attribute dictionaries, loc() and tricky strings", () => {
    const text = `module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> { return %arg0 : tensor<2xf32> }
  func.func public @main(%arg0: tensor<1x64xf32> {mhlo.sharding = "{replicated}", jax.arg_info = "x[0], (y)"} loc("args[0]"),
      %arg1: tensor<?x3xbf16> loc(#loc2), %arg2: tensor<i1>, %arg3: tensor<4xui8>, %arg4: i32,
      %arg5: tensor<2x2xf8E4M3FN, #enc<{a = 1, b = 2}>>) -> (tensor<1x10xf32> {jax.result_info = "result[0] -> (x)"}, tensor<f64>) {
    return %arg0 : tensor<1x64xf32>
  }
}`;
    const signature = parseMainSignature(text);
    expect(signature.args).toEqual([
      { dtype: "f32", shape: [1, 64] },
      { dtype: "bf16", shape: [-1, 3] },
      { dtype: "bool", shape: [] },
      { dtype: "u8", shape: [4] },
      { dtype: "i32", shape: [] },
      { dtype: "f8_e4m3", shape: [2, 2] },
    ]);
    expect(signature.results).toEqual([
      { dtype: "f32", shape: [1, 10] },
      { dtype: "f64", shape: [] },
    ]);
  });

  test("a single unparenthesised result and no results", () => {
    expect(parseMainSignature("func.func @main(%a: tensor<3xi64>) -> tensor<3xi64> attributes {x} {").results).toEqual([
      { dtype: "i64", shape: [3] },
    ]);
    expect(parseMainSignature("func.func @main() {").results).toEqual([]);
  });

  test("the generic op form", () => {
    const text = `"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "helper"}> ({}) : () -> ()
  "func.func"() <{arg_attrs = [{jax.arg_info = "x, (y)"}, {}], function_type = (tensor<1x64xf32>, tensor<64x10xbf16>) -> (tensor<1x10xf32>, tensor<i1>), sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<1x64xf32>, %arg1: tensor<64x10xbf16>):
    "func.return"(%arg0) : (tensor<1x64xf32>) -> ()
  }) : () -> ()
}) : () -> ()`;
    expect(parseMainSignature(text)).toEqual({
      args: [
        { dtype: "f32", shape: [1, 64] },
        { dtype: "bf16", shape: [64, 10] },
      ],
      results: [
        { dtype: "f32", shape: [1, 10] },
        { dtype: "bool", shape: [] },
      ],
    });
  });

  test("unsupported or missing signatures are SignatureSyntaxError", () => {
    expect(() => parseMainSignature("func.func @other() {")).toThrow(SignatureSyntaxError);
    expect(() => parseMainSignature("func.func @main(%a: tensor<3xcomplex<f32>>) {")).toThrow(/element type/);
    expect(() => parseMainSignature("func.func @main(%a: tensor<*xf32>) {")).toThrow(/dimension "\*"/);
    expect(() => parseMainSignature("func.func @main(%a: tensor<3xf32>")).toThrow(/unbalanced/);
  });
});

import { describe, expect, test } from "bun:test";
import { isModuleError } from "../src/errors.ts";
import type { NDArray } from "../src/elements.ts";
import type { Op } from "../src/ir.ts";
import { parseModule } from "../src/parser/parser.ts";

function mainOps(text: string): Op[] {
  const m = parseModule(text, "test.mlir");
  return (m.funcs.find((f) => f.name === "main") ?? m.funcs[0])?.body ?? [];
}

function parseError(text: string): { code: string; line: number; column: number; message: string } {
  try {
    parseModule(text, "bad.mlir");
  } catch (e) {
    if (!isModuleError(e)) throw e;
    return { code: e.code, line: Number(e.details.line), column: Number(e.details.column), message: e.message };
  }
  throw new Error("expected a parse error");
}

describe("pretty form", () => {
  test("module, locations, aliases and attributes", () => {
    const m = parseModule(
      `#loc = loc(unknown)
#loc1 = loc("args[0]")
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("a")) -> (tensor<3x2xf32> {jax.result_info = "r"}) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32> loc(#loc1)
    return %0 : tensor<3x2xf32>
  }
}
#loc2 = loc("x")`,
    );
    expect(m.name).toBe("jit_f");
    const f = m.funcs[0];
    expect(f?.args[0]?.type).toEqual({ kind: "tensor", elem: "f32", shape: [2, 3] });
    expect(f?.body[0]?.attrs.permutation).toEqual([1, 0]);
    expect(f?.body[1]?.name).toBe("func.return");
  });

  test("dot_general, conv and reduce syntax map to the spec's attributes", () => {
    const ops =
      mainOps(`func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %x: tensor<1x8x8x3xf32>, %k: tensor<3x3x3x4xf32>) {
      %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
      %1 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 1]], rhs_dilate = [1, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x4x3x4xf32>
      %cst = stablehlo.constant dense<0.0> : tensor<f32>
      %2 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x5xf32>
      func.return
    }`);
    expect(ops[0]?.attrs.dot_dimension_numbers).toEqual({
      lhs_batching_dimensions: [0],
      rhs_batching_dimensions: [0],
      lhs_contracting_dimensions: [2],
      rhs_contracting_dimensions: [1],
    });
    expect(ops[0]?.attrs.precision_config).toEqual(["DEFAULT", "HIGHEST"]);
    const conv = ops[1]?.attrs;
    expect(conv?.dimension_numbers).toMatchObject({
      input_batch_dimension: 0,
      input_feature_dimension: 3,
      input_spatial_dimensions: [1, 2],
      kernel_input_feature_dimension: 2,
      kernel_output_feature_dimension: 3,
      kernel_spatial_dimensions: [0, 1],
    });
    expect(conv?.window_strides).toEqual([2, 2]);
    expect(conv?.padding).toEqual([
      [1, 1],
      [0, 1],
    ]);
    expect(conv?.rhs_dilation).toEqual([1, 2]);
    expect(ops[3]?.operands).toEqual(["%0", "%cst"]);
    expect(ops[3]?.attrs.dimensions).toEqual([1]);
    expect(ops[3]?.regions[0]?.ops[0]?.name).toBe("stablehlo.add");
  });

  test("multi-result ops, while regions and reducer regions", () => {
    const ops = mainOps(`func.func @main() {
      %c = stablehlo.constant dense<0> : tensor<i64>
      %r0, %r1 = stablehlo.while(%i = %c, %s = %c) : tensor<i64>, tensor<i64>
      cond {
        %p = stablehlo.compare LT, %i, %c : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      } do {
        stablehlo.return %i, %s : tensor<i64>, tensor<i64>
      }
      %x:2 = stablehlo.reduce(%c init: %c), (%c init: %c) across dimensions = [] : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<i64>)
       reducer(%a: tensor<i64>, %b: tensor<i64>) (%d: tensor<i64>, %e: tensor<i64>)  {
        stablehlo.return %a, %d : tensor<i64>, tensor<i64>
      }
      func.return
    }`);
    expect(ops[1]?.results).toEqual(["%r0", "%r1"]);
    expect(ops[1]?.regions.map((r) => r.args.map((a) => a.name))).toEqual([
      ["%i", "%s"],
      ["%i", "%s"],
    ]);
    expect(ops[1]?.regions[0]?.ops[0]?.attrs.comparison_direction).toBe("LT");
    expect(ops[2]?.results).toEqual(["%x#0", "%x#1"]);
    expect(ops[2]?.operands).toEqual(["%c", "%c", "%c", "%c"]);
    expect(ops[2]?.regions[0]?.args.map((a) => a.name)).toEqual(["%a", "%d", "%b", "%e"]);
  });

  test("slice ranges, tuple index, iota, custom calls", () => {
    const ops = mainOps(`func.func @main(%a: tensor<8x8xf32>) {
      %0 = stablehlo.slice %a [1:5, 0:8:2] : (tensor<8x8xf32>) -> tensor<4x4xf32>
      %t = stablehlo.tuple %0 : tuple<tensor<4x4xf32>>
      %1 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<4x4xf32>>) -> tensor<4x4xf32>
      %2 = stablehlo.iota dim = 1 : tensor<3x4xi32>
      stablehlo.custom_call @check.expect_close(%1, %1) {has_side_effect = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> ()
      func.return
    }`);
    expect(ops[0]?.attrs).toMatchObject({ start_indices: [1, 0], limit_indices: [5, 8], strides: [1, 2] });
    expect(ops[1]?.resultTypes[0]?.kind).toBe("tuple");
    expect(ops[2]?.attrs.index).toBe(0);
    expect(ops[3]?.attrs.iota_dimension).toBe(1);
    expect(ops[4]?.attrs.call_target_name).toBe("check.expect_close");
  });
});

describe("dense constants", () => {
  const value = (literal: string, type: string): NDArray =>
    mainOps(`func.func @main() {
      %0 = stablehlo.constant dense<${literal}> : ${type}
      func.return
    }`)[0]?.attrs.value as NDArray;

  test("splat, nested lists, booleans", () => {
    expect(Array.from(value("1.5", "tensor<2x2xf32>").data as Float32Array)).toEqual([1.5, 1.5, 1.5, 1.5]);
    expect(Array.from(value("[[1, -2], [3, 4]]", "tensor<2x2xi8>").data as Int8Array)).toEqual([1, -2, 3, 4]);
    expect(Array.from(value("[true, false]", "tensor<2xi1>").data as Uint8Array)).toEqual([1, 0]);
  });

  test("hex floats, hex blobs, complex pairs, 64-bit integers", () => {
    const special = value("[0x7F800000, 0xFF800000, 0x7FC00000]", "tensor<3xf32>").data as Float32Array;
    expect(special[0]).toBe(Number.POSITIVE_INFINITY);
    expect(special[1]).toBe(Number.NEGATIVE_INFINITY);
    expect(Number.isNaN(special[2] as number)).toBe(true);
    expect(Array.from(value('"0x0000803F00000040"', "tensor<2xf32>").data as Float32Array)).toEqual([1, 2]);
    expect(Array.from(value("[(1.0, -2.0), (3.0, 4.0)]", "tensor<2xcomplex<f64>>").data as Float64Array)).toEqual([
      1, -2, 3, 4,
    ]);
    expect(Array.from(value("[-9223372036854775808, 18]", "tensor<2xi64>").data as BigInt64Array)).toEqual([
      -9223372036854775808n,
      18n,
    ]);
    expect((value("0x3C00", "tensor<bf16>").data as Uint16Array)[0]).toBe(0x3c00);
  });
});

describe("generic form", () => {
  test("generic ops with properties and regions", () => {
    const ops = mainOps(`func.func @main(%a: tensor<4xf32>) {
      %0 = "stablehlo.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %1 = "stablehlo.sort"(%0) <{dimension = 0 : i64, is_stable = true}> ({
      ^bb0(%x: tensor<f32>, %y: tensor<f32>):
        %p = "stablehlo.compare"(%x, %y) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        "stablehlo.return"(%p) : (tensor<i1>) -> ()
      }) : (tensor<4xf32>) -> tensor<4xf32>
      "func.return"() : () -> ()
    }`);
    expect(ops[0]?.name).toBe("stablehlo.add");
    expect(ops[1]?.attrs).toMatchObject({ dimension: 0, is_stable: true });
    expect(ops[1]?.regions[0]?.args.map((a) => a.name)).toEqual(["%x", "%y"]);
    expect(ops[1]?.regions[0]?.ops[0]?.attrs.comparison_direction).toBe("LT");
  });

  test("structured #stablehlo attributes become objects", () => {
    const ops = mainOps(`func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi64>) {
      %0 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
      func.return
    }`);
    expect(ops[0]?.attrs.dimension_numbers).toEqual({
      offset_dims: [1],
      collapsed_slice_dims: [0],
      start_index_map: [0],
      index_vector_dim: 1,
    });
    expect(ops[0]?.attrs.slice_sizes).toEqual([1, 4]);
  });
});

describe("errors", () => {
  test("MODULE_INVALID with line:column and the offending text", () => {
    const e = parseError(`func.func @main() {
  %0 = stablehlo.constant dense<1.0> : tensor<f32>
  %1 = stablehlo.add %0, %0 : tensor<f32> ]
}`);
    expect(e.code).toBe("MODULE_INVALID");
    expect(e.line).toBe(3);
    expect(e.column).toBe(43);
    expect(e.message).toContain("bad.mlir:3:43");
    expect(e.message).toContain("]");
  });

  test("undefined element types and truncated text", () => {
    expect(parseError("func.func @main(%a: tensor<2xq7>) {\n}").code).toBe("MODULE_INVALID");
    const truncated = parseError("func.func @main() {\n  %0 = stablehlo.constant dense<1> : tensor<i32>\n");
    expect(truncated.code).toBe("MODULE_INVALID");
    expect(truncated.line).toBe(3);
  });

  test("wrong element count in a dense literal", () => {
    const e = parseError("func.func @main() {\n  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<2xi32>\n}");
    expect(e.code).toBe("MODULE_INVALID");
    expect(e.line).toBe(2);
    expect(e.message).toContain("3 elements");
  });

  test("quantized types are UNSUPPORTED, not parse errors", () => {
    expect(parseError("func.func @main(%a: tensor<2x!quant.uniform<i8:f32, 0.1:-30>>) {\n}").code).toBe("UNSUPPORTED");
  });
});

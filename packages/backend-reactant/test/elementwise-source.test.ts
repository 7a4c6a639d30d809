import { describe, expect, test } from "bun:test";
import { loopSource } from "../src/kernels/elementwise.ts";
import { compareExpr } from "../src/kernels/expr.ts";
import { runOp, values } from "./helpers/run.ts";

/**
 * Generated elementwise loops name their types in their text (kernels/elementwise.ts): two loops
 * of the same text share one compiled body and type profile in JavaScriptCore, so a compare of
 * i32 and one of f32 would each run code made for both kinds of array.
 */
describe("generated elementwise loops", () => {
  test("a compare and a select of other operand types have other texts, and still compute the same", () => {
    const lt = ([a, b]: string[]) => compareExpr("LT", a as string, b as string);
    expect(loopSource(["i32", "i32"], "i1", lt, 0)).not.toBe(loopSource(["f32", "f32"], "i1", lt, 0));
    const select = ([p, a, b]: string[]) => `(${p} ? ${a} : ${b})`;
    expect(loopSource(["i1", "i32", "i32"], "i32", select, 0)).not.toBe(
      loopSource(["i1", "f32", "f32"], "f32", select, 0),
    );
    const cmp = (t: string, a: string, b: string) =>
      values(
        runOp(
          [`dense<${a}> : tensor<3x${t}>`, `dense<${b}> : tensor<3x${t}>`],
          `stablehlo.compare LT, %a, %b : (tensor<3x${t}>, tensor<3x${t}>) -> tensor<3xi1>`,
          "tensor<3xi1>",
        ),
      );
    expect(cmp("i32", "[1, 5, -2]", "[2, 5, -3]")).toEqual([1, 0, 0]);
    expect(cmp("f32", "[1.5, 5.0, -2.0]", "[2.0, 5.0, -3.0]")).toEqual([1, 0, 0]);
  });
});

import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { floatToInt, roundEven } from "../src/elem/helpers.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/**
 * A quantizing layer's chain (divide by the scale, round half to even, clip to [-127, 127],
 * convert to i8) and each of its ops alone: the inline forms the generated loops use give the
 * helpers' and Math.max / Math.min's results on every special value, fused or not.
 */
const VALUES = [
  0,
  -0,
  0.25,
  -0.25,
  0.5,
  -0.5,
  1.5,
  -1.5,
  2.5,
  -2.5,
  3.5,
  126.5,
  127,
  127.5,
  128,
  -127.5,
  -128,
  -128.5,
  200,
  -200,
  1e10,
  -1e10,
  2 ** 51 - 0.5,
  2 ** 51 + 1,
  2 ** 52,
  3e38,
  -3e38,
  1e-45,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
];
const N = VALUES.length;
const T = `tensor<${N}xf64>`;

function run(text: string, x: NDArray, fuse: boolean): NDArray[] {
  const program = new Program(parseModule(text), { fuse });
  return program.func(program.entryName()).invoke([x], { arena: new Arena(), failures: [] }) as NDArray[];
}

const module = `func.func @main(%x: ${T}) -> (${T}, ${T}, ${T}, tensor<${N}xi8>, tensor<${N}xi32>, tensor<${N}xi8>) {
  %lo = stablehlo.constant dense<-127.0> : ${T}
  %hi = stablehlo.constant dense<127.0> : ${T}
  %r = stablehlo.round_nearest_even %x : ${T}
  %a = stablehlo.maximum %lo, %x : ${T}
  %b = stablehlo.minimum %x, %hi : ${T}
  %c = stablehlo.convert %x : (${T}) -> tensor<${N}xi8>
  %d = stablehlo.convert %x : (${T}) -> tensor<${N}xi32>
  %scale = stablehlo.constant dense<0.5> : ${T}
  %q0 = stablehlo.divide %x, %scale : ${T}
  %q1 = stablehlo.round_nearest_even %q0 : ${T}
  %q2 = stablehlo.maximum %lo, %q1 : ${T}
  %q3 = stablehlo.minimum %hi, %q2 : ${T}
  %q = stablehlo.convert %q3 : (${T}) -> tensor<${N}xi8>
  return %r, %a, %b, %c, %d, %q : ${T}, ${T}, ${T}, tensor<${N}xi8>, tensor<${N}xi32>, tensor<${N}xi8>
}`;

describe("quantizing ops in generated loops", () => {
  const x: NDArray = { type: "f64", shape: [N], data: Float64Array.from(VALUES) };
  const expected = [
    VALUES.map(roundEven),
    VALUES.map((v) => Math.max(-127, v)),
    VALUES.map((v) => Math.min(v, 127)),
    VALUES.map((v) => (floatToInt(v, -128, 127) << 24) >> 24),
    VALUES.map((v) => floatToInt(v, -(2 ** 31), 2 ** 31 - 1)),
    VALUES.map((v) => floatToInt(Math.min(127, Math.max(-127, roundEven(v / 0.5))), -128, 127)),
  ].map((values, k) => (k >= 3 ? values.map((v) => v + 0) : values)); // integer storage has no -0
  for (const fuse of [false, true]) {
    test(`${fuse ? "fused" : "one op at a time"}: round, clip and convert as the helpers define them`, () => {
      const outputs = run(module, x, fuse);
      outputs.forEach((o, k) => {
        const got = Array.from(o.data as Float64Array);
        (expected[k] as number[]).forEach((want, i) => {
          // Object.is: -0 and NaN count.
          if (!Object.is(got[i], want))
            throw new Error(
              `output ${k}, x = ${Object.is(VALUES[i], -0) ? "-0" : VALUES[i]}: got ${got[i]}, want ${want}`,
            );
        });
      });
    });
  }

  test("round_nearest_even keeps ties to even and the sign of zero", () => {
    expect(roundEven(2.5)).toBe(2);
    expect(roundEven(-2.5)).toBe(-2);
    expect(Object.is(roundEven(-0.25), -0)).toBe(true);
  });
});

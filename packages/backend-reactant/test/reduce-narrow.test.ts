import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import { BF16_TO_NUMBER, F16_TO_NUMBER, encodeBf16, encodeF16 } from "@xlaserve/stablehlo/float16.ts";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/** reduce over the last axis of a 64 x 100 array of `type`, with `op` as the reducer. */
function run(type: "f16" | "bf16", op: "add" | "maximum", data: Uint16Array): Uint16Array {
  const text = `func.func @main(%x: tensor<64x100x${type}>) -> tensor<64x${type}> {
    %init = stablehlo.constant dense<${op === "add" ? "0.0" : "-1.0"}> : tensor<${type}>
    %0 = stablehlo.reduce(%x init: %init) applies stablehlo.${op} across dimensions = [1] : (tensor<64x100x${type}>, tensor<${type}>) -> tensor<64x${type}>
    return %0 : tensor<64x${type}>
  }`;
  const program = new Program(parseModule(text), { fuse: true });
  const f = program.func(program.entryName());
  const x: NDArray = { type, shape: [64, 100], data };
  return (f.invoke([x], { arena: new Arena(), failures: [] }) as NDArray[])[0]?.data as Uint16Array;
}

describe("f16 / bf16 reductions", () => {
  for (const type of ["f16", "bf16"] as const) {
    test(`${type} sums and maxima round to the type after every step, in index order`, () => {
      const decode = type === "f16" ? F16_TO_NUMBER : BF16_TO_NUMBER;
      const encode = type === "f16" ? encodeF16 : encodeBf16;
      const data = new Uint16Array(6400);
      // Values of mixed signs and scales (sums cancel, round and overflow); zeros of both signs.
      for (let i = 0; i < data.length; i++) data[i] = encode(Math.sin(i * 0.37) * 10 ** ((i % 7) - 2));
      data[5] = encode(-0);
      data[130] = encode(60000);
      data[131] = encode(60000);
      for (const op of ["add", "maximum"] as const) {
        const got = run(type, op, data);
        for (let k = 0; k < 64; k++) {
          let acc = op === "add" ? 0 : -1;
          for (let r = 0; r < 100; r++) {
            const v = decode[data[k * 100 + r] as number] as number;
            acc = decode[encode(op === "add" ? acc + v : Math.max(acc, v))] as number;
          }
          expect(got[k]).toBe(encode(acc));
        }
      }
    });
  }
});

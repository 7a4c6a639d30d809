import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";
import { argReduceModule } from "./arg-reduce-module.ts";

function run(text: string, x: NDArray): [number[], number[]] {
  const f = new Program(parseModule(text)).func("main");
  const [v, i] = f.invoke([x], { arena: new Arena({ pool: true }), failures: [] }) as NDArray[];
  return [Array.from((v as NDArray).data as Float32Array), Array.from((i as NDArray).data as Int32Array)];
}

describe("arg-max / arg-min reduce", () => {
  // Row 0: ties for the extreme (the first index wins); row 1: a NaN after the extreme (the NaN
  // wins); row 2: every element the init's infinity (index 0).
  const x = new Float32Array(3 * 80);
  for (let i = 0; i < 80; i++) x[i] = ((i * 37) % 23) - 11;
  for (let i = 0; i < 80; i++) x[80 + i] = Math.sin(i) * 3;
  x[80 + 50] = Number.NaN;
  x[80 + 70] = Number.NaN;
  for (const direction of ["GT", "LT"] as const)
    test(`${direction === "GT" ? "argmax" : "argmin"} equals the region evaluated op by op`, () => {
      const row2 = direction === "GT" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
      const data = x.slice();
      data.fill(row2, 160);
      const input: NDArray = { type: "f32", shape: [3, 80], data };
      const [values, indices] = run(argReduceModule(direction, false, 3, 80), input);
      const [generalValues, generalIndices] = run(argReduceModule(direction, true, 3, 80), input);
      expect(indices).toEqual(generalIndices);
      expect(values.map(String)).toEqual(generalValues.map(String));
      const extreme = direction === "GT" ? 11 : -11;
      expect(indices).toEqual([Array.from(data.subarray(0, 80)).indexOf(extreme), 50, 0]);
    });
});

import { describe, expect, test } from "bun:test";
import type { NDArray } from "../src/array.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";
import { EXAMPLE_CASES } from "../src/tools/example-tensors.ts";
import { compareF32, loadExample } from "./helpers/bundles.ts";

/**
 * The example bundles against the XLA-CPU outputs stored in their reference.safetensors. The
 * engine computes in the same precision (f32), so differences are summation-order effects:
 * bounded by an absolute tolerance (ULP counts near zero are large and meaningless).
 */

describe("example bundles match XLA CPU", () => {
  for (const [model, batch] of EXAMPLE_CASES) {
    test(`${model} b${batch}`, () => {
      const c = loadExample(model, batch);
      const program = new Program(parseModule(c.mlir, `${model}/model.b${batch}.mlir`));
      const outputs = program
        .func(program.entryName())
        .invoke(c.args, { arena: new Arena(), failures: [] }) as NDArray[];
      expect(outputs.length).toBe(c.expected.length);
      c.expected.forEach(({ name, value }, i) => {
        const actual = outputs[i] as NDArray;
        expect(actual.shape).toEqual(value.shape);
        const { maxAbs, maxUlp } = compareF32(actual, value);
        console.log(`${model} b${batch} ${name}: max |diff| ${maxAbs.toExponential(2)}, max ULP ${maxUlp}`);
        expect(maxAbs).toBeLessThan(1e-5);
      });
    });
  }
});

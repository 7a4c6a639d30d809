import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray } from "../src/array.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";
import { deserializeModule, serializeModule } from "../src/plan/serialize.ts";
import { loadExample } from "./helpers/bundles.ts";

function runModule(module: ReturnType<typeof parseModule>, args: NDArray[]): NDArray[] {
  const program = new Program(module);
  return program.func(program.entryName()).invoke(args, { arena: new Arena(), failures: [] }) as NDArray[];
}

function bytesOf(a: NDArray): Uint8Array {
  return new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
}

describe("plan serialization", () => {
  for (const model of ["mlp", "cnn", "transformer"]) {
    test(`${model}: outputs are byte-identical after a round trip, and loading is faster than parsing`, () => {
      const c = loadExample(model, 1);
      const parseStart = performance.now();
      const parsed = parseModule(c.mlir, model);
      const parseMs = performance.now() - parseStart;
      const bytes = serializeModule(parsed);
      const loadStart = performance.now();
      const loaded = deserializeModule(bytes).module;
      const loadMs = performance.now() - loadStart;
      const before = runModule(parsed, c.args);
      const after = runModule(loaded, c.args);
      expect(after.length).toBe(before.length);
      before.forEach((b, i) => {
        expect(bytesOf(after[i] as NDArray)).toEqual(bytesOf(b));
      });
      console.log(`${model}: parse ${parseMs.toFixed(2)} ms, load plan ${loadMs.toFixed(2)} ms, ${bytes.length} bytes`);
    });
  }

  test("constants survive with their bits (NaN, -0, i64, complex)", () => {
    const text = `func.func @main() -> (tensor<3xf32>, tensor<2xi64>, tensor<1xcomplex<f64>>) {
      %a = stablehlo.constant dense<[0x7FC00001, -0.0, 1.5]> : tensor<3xf32>
      %b = stablehlo.constant dense<[-9223372036854775808, 7]> : tensor<2xi64>
      %c = stablehlo.constant dense<[(1.0, -2.0)]> : tensor<1xcomplex<f64>>
      return %a, %b, %c : tensor<3xf32>, tensor<2xi64>, tensor<1xcomplex<f64>>
    }`;
    const parsed = parseModule(text);
    const loaded = deserializeModule(serializeModule(parsed)).module;
    const before = runModule(parsed, []);
    const after = runModule(loaded, []);
    before.forEach((b, i) => {
      expect(bytesOf(after[i] as NDArray)).toEqual(bytesOf(b));
    });
  });

  test("corrupt or foreign bytes are CACHE_CORRUPT", () => {
    const good = serializeModule(parseModule("func.func @main() {\n func.return\n}"));
    for (const bad of [new Uint8Array([1, 2, 3]), good.slice(0, 14)]) {
      try {
        deserializeModule(bad);
        throw new Error("expected an error");
      } catch (e) {
        expect(isXlaserveError(e, "CACHE_CORRUPT")).toBe(true);
      }
    }
  });
});

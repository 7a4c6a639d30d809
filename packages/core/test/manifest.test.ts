import { describe, expect, test } from "bun:test";
import { parseManifest } from "../src/index.ts";

/** Rules that need a model.jl (which loadBundle refuses), exercised on the parser directly. */

function hooked(extra: Record<string, unknown>) {
  return {
    format_version: "2.0",
    name: "tagger",
    executable_inputs: [{ name: "x", dtype: "f8_e4m3", shape: "cn", dims: { c: 16 } }],
    executable_outputs: [{ name: "y", dtype: "f32", shape: "cn", dims: { c: 4 } }],
    batching: { compiled_batch_sizes: [2, 1] },
    ...extra,
  };
}

describe("parseManifest with a model.jl", () => {
  test("client_* specs are parsed and an f8 executable input is fine behind them", () => {
    const manifest = parseManifest(
      hooked({
        client_inputs: [{ name: "text", dtype: "u8", shape: "ln", dims: { l: -1 } }],
        client_outputs: [{ name: "label", dtype: "i64", shape: "n" }],
      }),
      { bundle: "tagger", hasModelJl: true },
    );
    expect(manifest.clientInputs?.[0]?.dims.map((d) => d.kind)).toEqual(["batch", "variable"]);
    expect(manifest.clientOutputs?.[0]?.dims).toEqual([{ kind: "batch", size: -1, letter: "n" }]);
    expect(manifest.compiledBatchSizes).toEqual([2, 1]);
    expect(manifest.kind).toBe("model");
  });

  test("without client_inputs the f8 executable input is client-facing and refused", () => {
    expect(() => parseManifest(hooked({}), { bundle: "tagger", hasModelJl: true })).toThrow(
      expect.objectContaining({
        code: "BUNDLE_INVALID",
        details: expect.objectContaining({ field: "executable_inputs[0].dtype" }),
      }),
    );
  });

  test("an f8 client output is refused", () => {
    const raw = hooked({
      client_inputs: [{ name: "text", dtype: "u8", shape: "n" }],
      client_outputs: [{ name: "label", dtype: "f8_e5m2", shape: "n" }],
    });
    expect(() => parseManifest(raw, { bundle: "tagger", hasModelJl: true })).toThrow(/client_outputs\[0\]\.dtype/);
  });

  test("duplicate names are checked in client sections too", () => {
    const raw = hooked({
      client_inputs: [
        { name: "text", dtype: "u8", shape: "n" },
        { name: "text", dtype: "u8", shape: "n" },
      ],
    });
    expect(() => parseManifest(raw, { bundle: "tagger", hasModelJl: true })).toThrow(
      /client_inputs\[1\]\.name: duplicate tensor name "text"/,
    );
  });

  test("inputs of different rank may put the batch axis in different places", () => {
    const manifest = parseManifest(
      hooked({
        executable_inputs: [
          { name: "img", dtype: "f32", shape: "whn", dims: { w: 8, h: 8 } },
          { name: "vec", dtype: "f32", shape: "dn", dims: { d: 2 } },
          { name: "first", dtype: "f32", shape: "nd", dims: { d: 2 } },
        ],
      }),
      { bundle: "tagger", hasModelJl: false },
    );
    expect(manifest.executableInputs.map((t) => t.batchAxis)).toEqual([0, 0, 1]);
    expect(manifest.inputBatchAxis).toBe(0);
  });
});

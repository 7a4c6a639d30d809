import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadBundle } from "../src/index.ts";
import {
  editMain,
  editText,
  readSafetensorsParts,
  refreshWeightsHash,
  tempRepository,
  writeSafetensorsParts,
} from "./helpers/bundles.ts";

/** The valid bundle layouts beyond the examples' model.b{N}.mlir: each is built from an example. */

const PORTABLE_MLP_B1 = join(import.meta.dir, "..", "..", "..", "tests", "fixtures", "mlp_portable_b1.mlirbc");

describe("bundle layouts", () => {
  const repo = tempRepository();
  afterAll(() => repo.dispose());

  test("multi-shape variants: model.v{i}.b{N}.mlir checked against each variant's sizes", async () => {
    const dir = repo.copy("cnn", "cnn-variants");
    editText(join(dir, "manifest.yaml"), (t) =>
      t
        .replace('name: "cnn"', 'name: "cnn-variants"')
        .replace("      c: 32\n      d: 32", "      c: -1\n      d: -1")
        .concat("input_shapes:\n  - {c: 32, d: 32}\n  - {c: 16, d: 24}\n"),
    );
    for (const size of [1, 4]) {
      copyFileSync(join(dir, `model.b${size}.mlir`), join(dir, `model.v1.b${size}.mlir`));
      editMain(join(dir, `model.v1.b${size}.mlir`), (l) =>
        l.replace(`tensor<${size}x32x32x3xf32>`, `tensor<${size}x16x24x3xf32>`),
      );
      renameSync(join(dir, `model.b${size}.mlir`), join(dir, `model.v0.b${size}.mlir`));
    }
    const bundle = await loadBundle(dir);
    expect(bundle.modules.map((m) => [m.file, m.variant, m.batchSize])).toEqual([
      ["model.v0.b1.mlir", 0, 1],
      ["model.v0.b4.mlir", 0, 4],
      ["model.v1.b1.mlir", 1, 1],
      ["model.v1.b4.mlir", 1, 4],
    ]);
    expect(bundle.manifest.inputShapeVariants).toEqual([
      { index: 0, shapes: { image: [-1, 32, 32, 3] } },
      { index: 1, shapes: { image: [-1, 16, 24, 3] } },
    ]);
    expect(bundle.manifest.executableInputs[0]?.dims.map((d) => d.kind)).toEqual([
      "batch",
      "variable",
      "variable",
      "fixed",
    ]);

    // The same files with variant 1 declared as 32x32 must now fail on model.v1.*.
    editText(join(dir, "manifest.yaml"), (t) => t.replace("{c: 16, d: 24}", "{c: 32, d: 16}"));
    await expect(loadBundle(dir)).rejects.toMatchObject({
      code: "MODULE_SIGNATURE_MISMATCH",
      details: { file: "model.v1.b1.mlir", field: "argument 0", tensor: "image" },
    });
  });

  test("a portable-artifact (bytecode) module has its signature read and checked like a text one", async () => {
    const dir = repo.copy("mlp");
    const text = await loadBundle(dir);
    copyFileSync(PORTABLE_MLP_B1, join(dir, "model.b1.mlir"));
    const bundle = await loadBundle(dir);
    expect(bundle.modules.map((m) => [m.file, m.format])).toEqual([
      ["model.b1.mlir", "bytecode"],
      ["model.b8.mlir", "text"],
    ]);
    expect(bundle.modules[0]?.signature).toEqual(text.modules[0]?.signature ?? null);
    // The b1 artifact in the b8 slot: its batch axis disagrees with the manifest.
    copyFileSync(PORTABLE_MLP_B1, join(dir, "model.b8.mlir"));
    await expect(loadBundle(dir)).rejects.toMatchObject({
      code: "MODULE_SIGNATURE_MISMATCH",
      details: { file: "model.b8.mlir" },
    });
    rmSync(dir, { recursive: true });
  });

  test("a truncated or corrupt portable artifact is BUNDLE_INVALID naming file, offset and what was expected", async () => {
    const dir = repo.copy("mlp");
    const bytes = readFileSync(PORTABLE_MLP_B1);
    writeFileSync(join(dir, "model.b1.mlir"), bytes.subarray(0, 900));
    const error = await loadBundle(dir).then(
      () => null,
      (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
    );
    expect(error?.code).toBe("BUNDLE_INVALID");
    expect(error?.details.file).toBe("model.b1.mlir");
    expect(typeof error?.details.offset).toBe("number");
    expect(error?.message).toMatch(
      /model\.b1\.mlir: is not a readable StableHLO portable artifact: invalid MLIR bytecode at offset \d+: expected /,
    );
    const newer = Buffer.from(bytes);
    newer[4] = 7 * 2 + 1; // bytecode format version 7
    writeFileSync(join(dir, "model.b1.mlir"), newer);
    await expect(loadBundle(dir)).rejects.toMatchObject({
      code: "BUNDLE_INVALID",
      details: { offset: 4 },
      message: expect.stringContaining("format version of at most 6, found version 7"),
    });
    rmSync(dir, { recursive: true });
  });

  test("one model.mlir with a dynamic batch axis serves every compiled size", async () => {
    const dir = repo.copy("mlp");
    rmSync(join(dir, "model.b1.mlir"));
    renameSync(join(dir, "model.b8.mlir"), join(dir, "model.mlir"));
    editMain(join(dir, "model.mlir"), (l) => l.replaceAll("tensor<8x", "tensor<?x"));
    const bundle = await loadBundle(dir);
    expect(bundle.modules.map((m) => [m.file, m.batchSize])).toEqual([["model.mlir", null]]);
    expect(bundle.modules[0]?.signature?.args[0]?.shape).toEqual([-1, 64]);
    rmSync(dir, { recursive: true });
  });

  test("a weight stored with its shape reversed (a Julia exporter) still matches", async () => {
    const dir = repo.copy("mlp");
    const path = join(dir, "weights.safetensors");
    const parts = readSafetensorsParts(path);
    (parts.header["fc1.kernel"] as { shape: number[] }).shape = [256, 64];
    writeSafetensorsParts(path, parts);
    refreshWeightsHash(dir);
    const bundle = await loadBundle(dir);
    expect(bundle.weights.tensor("fc1.kernel").shape).toEqual([256, 64]);
    rmSync(dir, { recursive: true });
  });

  test("an unquoted format_version 2.0 (a YAML number) is accepted", async () => {
    const dir = repo.copy("transformer");
    editText(join(dir, "manifest.yaml"), (t) => t.replace('format_version: "2.0"', "format_version: 2.0"));
    expect((await loadBundle(dir)).manifest.formatVersion).toBe("2");
    rmSync(dir, { recursive: true });
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleFingerprint } from "../src/index.ts";
import { tempRepository } from "./helpers/bundles.ts";

describe("bundleFingerprint", () => {
  const repo = tempRepository();
  afterAll(() => repo.dispose());
  const dir = repo.copy("mlp");

  test("covers manifest, modules and weights only", () => {
    const files = bundleFingerprint(dir).files.map((f) => f.file);
    expect(files).toEqual(["manifest.yaml", "model.b1.mlir", "model.b8.mlir", "weights.safetensors"]);
  });

  test("writes under .cache/ never change it", () => {
    const before = bundleFingerprint(dir).key;
    mkdirSync(join(dir, ".cache", "pjrt-cuda"), { recursive: true });
    writeFileSync(join(dir, ".cache", "mlir_hashes.json"), "{}");
    writeFileSync(join(dir, ".cache", "pjrt-cuda", "abc.bin"), "program");
    writeFileSync(join(dir, "notes.txt"), "not a bundle file");
    expect(bundleFingerprint(dir).key).toBe(before);
  });

  test("a touched weights file, a new variant module or a model.jl changes it", () => {
    const before = bundleFingerprint(dir).key;
    utimesSync(join(dir, "weights.safetensors"), new Date(), new Date(Date.now() + 5000));
    const afterTouch = bundleFingerprint(dir).key;
    expect(afterTouch).not.toBe(before);
    writeFileSync(join(dir, "model.v0.b1.mlir"), "module {}");
    const afterVariant = bundleFingerprint(dir);
    expect(afterVariant.files.map((f) => f.file)).toContain("model.v0.b1.mlir");
    writeFileSync(join(dir, "model.jl"), "# hooks");
    expect(bundleFingerprint(dir).key).not.toBe(afterVariant.key);
  });

  test("sizes and nanosecond mtimes are recorded", () => {
    const manifest = bundleFingerprint(dir).files.find((f) => f.file === "manifest.yaml");
    expect(manifest?.size).toBeGreaterThan(100);
    expect(BigInt(manifest?.mtimeNs ?? "0")).toBeGreaterThan(10n ** 18n);
  });

  test("a vanished bundle has an empty fingerprint", () => {
    expect(bundleFingerprint(join(repo.root, "gone"))).toEqual({ files: [], key: "" });
  });
});

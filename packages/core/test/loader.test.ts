import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Bundle, discoverBundles, loadBundle, openSafetensors } from "../src/index.ts";
import { EXAMPLES_DIR, EXAMPLE_NAMES, tempRepository } from "./helpers/bundles.ts";

/** Reads float32 values straight from the file bytes, independently of the reader under test. */
function floatsFromFile(path: string, tensor: string, count: number): number[] {
  const bytes = readFileSync(path);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8"));
  const start = 8 + headerLength + header[tensor].data_offsets[0];
  return Array.from({ length: count }, (_, i) => bytes.readFloatLE(start + 4 * i));
}

const loaded = new Map<string, Bundle>();
async function example(name: string): Promise<Bundle> {
  let bundle = loaded.get(name);
  if (!bundle) {
    bundle = await loadBundle(join(EXAMPLES_DIR, name));
    loaded.set(name, bundle);
  }
  return bundle;
}

describe("the example bundles load", () => {
  test("mlp: row-major shapes, two modules, argument order, weight values", async () => {
    const mlp = await example("mlp");
    expect(mlp.name).toBe("mlp");
    expect(mlp.manifest.formatVersion).toBe("2.0");
    const [features] = mlp.manifest.executableInputs;
    expect(features?.name).toBe("features");
    expect(features?.letters).toBe("cn");
    expect(features?.dims.map((d) => d.size)).toEqual([-1, 64]);
    expect(features?.batchAxis).toBe(0);
    expect(mlp.manifest.inputBatchAxis).toBe(0);
    expect(mlp.manifest.executableOutputs.map((o) => o.name)).toEqual(["probabilities", "logits"]);
    expect(mlp.manifest.compiledBatchSizes).toEqual([1, 8]);
    expect(mlp.modules.map((m) => [m.file, m.batchSize, m.format])).toEqual([
      ["model.b1.mlir", 1, "text"],
      ["model.b8.mlir", 8, "text"],
    ]);
    expect(mlp.weights.argumentOrder).toEqual([
      "fc1.bias",
      "fc1.kernel",
      "fc2.bias",
      "fc2.kernel",
      "fc3.bias",
      "fc3.kernel",
    ]);
    const kernel = mlp.weights.tensor("fc1.kernel");
    expect(kernel.dtype).toBe("f32");
    expect(kernel.shape).toEqual([64, 256]);
    expect(kernel.data.length).toBe(64 * 256);
    const expected = floatsFromFile(mlp.weights.path, "fc1.kernel", 4);
    expect(Array.from(kernel.data.subarray(0, 4) as Float32Array)).toEqual(expected);
    expect(mlp.weights.totalBytes).toBe((256 + 64 * 256 + 256 + 256 * 256 + 10 + 256 * 10) * 4);
    expect(mlp.modules[1]?.signature?.args[0]).toEqual({ dtype: "f32", shape: [8, 64] });
  });

  test("cnn: the image input is NHWC row-major from column-major 'edcn'", async () => {
    const cnn = await example("cnn");
    const [image] = cnn.manifest.executableInputs;
    expect(image?.letters).toBe("edcn");
    expect(image?.dims.map((d) => d.letter)).toEqual(["n", "c", "d", "e"]);
    expect(image?.dims.map((d) => d.size)).toEqual([-1, 32, 32, 3]);
    expect(cnn.modules.map((m) => m.batchSize)).toEqual([1, 4]);
    expect(cnn.weights.argumentOrder.length).toBe(22);
    expect(cnn.modules[0]?.signature?.args.length).toBe(1 + 22);
    expect(cnn.weights.tensor("stem.conv.kernel").shape.length).toBe(4);
  });

  test("transformer: i32 tokens, 30 weights in order", async () => {
    const transformer = await example("transformer");
    expect(transformer.manifest.executableInputs[0]?.dtype).toBe("i32");
    expect(transformer.weights.argumentOrder[0]).toBe("embed");
    expect(transformer.weights.argumentOrder.length).toBe(30);
    const embed = transformer.weights.tensor("embed");
    expect(embed.shape).toEqual([512, 64]);
    expect(Array.from(embed.data.subarray(0, 3) as Float32Array)).toEqual(
      floatsFromFile(transformer.weights.path, "embed", 3),
    );
  });

  test("module hashes are sha256 of the file bytes and read() returns the bytes", async () => {
    const mlp = await example("mlp");
    const module = mlp.modules[0];
    if (!module) throw new Error("mlp has no modules");
    const bytes = readFileSync(module.path);
    expect(module.sha256).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
    expect(module.byteLength).toBe(bytes.byteLength);
    expect(Buffer.from(await module.read()).equals(bytes)).toBe(true);
  });

  test("weights sha256 matches the exporter's provenance record", async () => {
    for (const name of EXAMPLE_NAMES) {
      const bundle = await example(name);
      expect(await bundle.weights.sha256()).toBe(bundle.manifest.provenance.weights_sha256 as string);
    }
  });

  test("tensor() views the mapped file (no copy) and names unknown tensors", async () => {
    const mlp = await example("mlp");
    const a = mlp.weights.tensor("fc2.kernel");
    const b = mlp.weights.tensor("fc2.kernel");
    expect(a.data.buffer).toBe(b.data.buffer);
    expect(() => mlp.weights.tensor("nope")).toThrow(/no tensor "nope"/);
  });

  test("reference.safetensors reads with the same reader (no argument_order needed)", () => {
    const reference = openSafetensors(join(EXAMPLES_DIR, "mlp", "reference.safetensors"));
    expect(reference.argumentOrder).toEqual([]);
    expect(reference.metadata.batch_sizes).toBe("[1, 8]");
    expect(reference.tensor("b8/inputs/features").shape).toEqual([8, 64]);
  });
});

describe("discoverBundles", () => {
  const repo = tempRepository();
  afterAll(() => repo.dispose());

  test("lists the three examples in name order", () => {
    expect(discoverBundles(EXAMPLES_DIR).map((b) => b.name)).toEqual(["cnn", "mlp", "transformer"]);
  });

  test("skips hidden directories, plain files and directories without a manifest", async () => {
    repo.copy("mlp");
    repo.copy("mlp", ".hidden");
    await Bun.write(join(repo.root, "notes", "readme.txt"), "not a bundle");
    await Bun.write(join(repo.root, "stray.yaml"), "name: x");
    expect(discoverBundles(repo.root).map((b) => b.name)).toEqual(["mlp"]);
  });

  test("a missing repository is BUNDLE_NOT_FOUND", () => {
    expect(() => discoverBundles(join(repo.root, "missing"))).toThrow(
      expect.objectContaining({ code: "BUNDLE_NOT_FOUND" }),
    );
  });
});

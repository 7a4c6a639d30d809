import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadBundle, openSafetensors, typedAsBytes } from "../src/index.ts";
import { buildSafetensors, tempRepository } from "./helpers/bundles.ts";

const dir = mkdtempSync(join(tmpdir(), "xlaserve-st-"));
const repo = tempRepository();
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  repo.dispose();
});

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe("openSafetensors", () => {
  test("reads every dtype family, scalars and empty tensors", () => {
    const f16 = new Uint16Array([0x3c00, 0xc000]); // 1, -2
    const i64 = new BigInt64Array([-5n, 1n << 40n]);
    const path = write(
      "mixed.safetensors",
      buildSafetensors(
        [
          { name: "half", dtype: "F16", shape: [2], bytes: typedAsBytes(f16) },
          { name: "big", dtype: "I64", shape: [2, 1], bytes: typedAsBytes(i64) },
          { name: "flag", dtype: "BOOL", shape: [], bytes: new Uint8Array([1]) },
          { name: "none", dtype: "F32", shape: [0, 3], bytes: new Uint8Array(0) },
        ],
        { argument_order: JSON.stringify(["big", "half"]), note: "x" },
      ),
    );
    const file = openSafetensors(path, { requireArgumentOrder: true });
    expect(file.argumentOrder).toEqual(["big", "half"]);
    expect(file.metadata.note).toBe("x");
    expect(Array.from(file.tensor("half").data as Uint16Array)).toEqual([0x3c00, 0xc000]);
    expect(Array.from(file.tensor("big").data as BigInt64Array)).toEqual([-5n, 1n << 40n]);
    expect(file.tensor("flag")).toMatchObject({ dtype: "bool", shape: [] });
    expect(file.tensor("none").data.length).toBe(0);
    expect(file.totalBytes).toBe(4 + 16 + 1);
  });

  test("a data section at an odd offset is copied into an aligned array, with the right values", () => {
    const values = new Float32Array([1.5, -2.25, 3e-8]);
    // A one-byte tensor first puts the f32 tensor at an odd file offset whatever the header length.
    const path = write(
      "misaligned.safetensors",
      buildSafetensors([
        { name: "pad", dtype: "U8", shape: [1], bytes: new Uint8Array([7]) },
        { name: "w", dtype: "F32", shape: [3], bytes: typedAsBytes(values) },
      ]),
    );
    const file = openSafetensors(path);
    expect((file.tensors.get("w")?.byteOffset ?? 0) % 4).not.toBe(0);
    const tensor = file.tensor("w");
    expect(tensor.data.byteOffset % 4).toBe(0);
    expect(Array.from(tensor.data as Float32Array)).toEqual(Array.from(values));
  });

  test("a file without tensors needs no argument_order", () => {
    const file = openSafetensors(write("empty.safetensors", buildSafetensors([])), { requireArgumentOrder: true });
    expect(file.names).toEqual([]);
    expect(file.argumentOrder).toEqual([]);
  });

  test("a missing file is NOT_FOUND naming it", () => {
    expect(() => openSafetensors(join(dir, "absent.safetensors"))).toThrow(
      expect.objectContaining({ code: "NOT_FOUND", details: expect.objectContaining({ file: "absent.safetensors" }) }),
    );
  });

  test("writing into a tensor view never reaches the file (a private copy)", async () => {
    const bundleDir = repo.copy("mlp");
    const path = join(bundleDir, "weights.safetensors");
    const before = readFileSync(path);
    const bundle = await loadBundle(bundleDir);
    const bias = bundle.weights.tensor("fc1.bias").data as Float32Array;
    bias[0] = 12345;
    expect(bundle.weights.tensor("fc1.bias").data[0]).toBe(12345);
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});

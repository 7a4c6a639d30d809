import { describe, expect, test } from "bun:test";
import { ENTRY_FORMAT_VERSION, decodeEntry, encodeEntry } from "../src/entry-format.ts";
import { entryName, optionsHash, parseEntryName } from "../src/entry-key.ts";
import { sha256, sha256Hex } from "../src/hash.ts";
import { partitionName } from "../src/partition.ts";
import { BASE_IDENTITY } from "./support/hash-backend.ts";

const facts = {
  identity: BASE_IDENTITY,
  partition: partitionName(BASE_IDENTITY),
  moduleFile: "model.b1.mlir",
  compileMs: 12.5,
  createdAt: 1_700_000_000_000,
};
const src = sha256Hex("module");
const opts = optionsHash({ deterministic: true });
const payload = new Uint8Array(1000).map((_, i) => (i * 7) & 255);

describe("entry format", () => {
  test("round-trips header facts, hashes and payload", () => {
    const d = decodeEntry(encodeEntry(facts, src, opts, payload));
    if (!d.ok) throw new Error(d.detail);
    expect(d.header.facts).toEqual(facts);
    expect(d.header.sourceHash).toBe(src);
    expect(d.header.optionsHash).toBe(opts);
    expect(d.header.formatVersion).toBe(ENTRY_FORMAT_VERSION);
    expect([...d.payload]).toEqual([...payload]);
  });

  test("a genuine entry of another format version reads as wrong-format, not corruption", () => {
    const d = decodeEntry(encodeEntry(facts, src, opts, payload, ENTRY_FORMAT_VERSION + 1));
    expect(d.ok ? null : d.reason).toBe("wrong-format-version");
  });

  test("every single-byte flip anywhere in the file is detected", () => {
    const bytes = encodeEntry(facts, src, opts, payload.subarray(0, 64));
    for (let i = 0; i < bytes.length; i++) {
      const bad = bytes.slice();
      bad[i]! ^= 0x01;
      expect(decodeEntry(bad).ok).toBe(false);
    }
  });

  test("every truncation is detected, and so is appended garbage", () => {
    const bytes = encodeEntry(facts, src, opts, payload.subarray(0, 64));
    for (let n = 0; n < bytes.length; n++) expect(decodeEntry(bytes.subarray(0, n)).ok).toBe(false);
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expect(decodeEntry(longer).ok ? null : (decodeEntry(longer) as { reason: string }).reason).toBe("length-mismatch");
  });

  test("a header whose checksum was recomputed over a bad facts JSON is still refused", () => {
    const bytes = encodeEntry(facts, src, opts, payload);
    const text = new TextDecoder().decode(bytes.subarray(16, 16 + new DataView(bytes.buffer).getUint32(12, true)));
    const broken = text.replace('"backend"', '"backenX"');
    const b2 = bytes.slice();
    b2.set(new TextEncoder().encode(broken), 16);
    const headerEnd = 16 + text.length + 136;
    b2.set(sha256(b2.subarray(0, headerEnd - 32)), headerEnd - 32);
    const d = decodeEntry(b2);
    expect(d.ok ? null : d.reason).toBe("bad-facts");
  });
});

describe("names", () => {
  test("partition names are readable, stable and distinct per field", () => {
    const name = partitionName(BASE_IDENTITY);
    expect(name).toMatch(/^pjrt-cuda-xla_0.5.1_plugin_0a1b2c3d-cuda12.8-nvidia_h200-sm90-[0-9a-f]{8}$/);
    expect(partitionName({ ...BASE_IDENTITY })).toBe(name);
    const cpu = partitionName({
      backend: "reactant",
      platform: "cpu",
      buildId: "plan-v1",
      runtimeVersion: "none",
      deviceKind: "cpu",
      computeCapability: "none",
    });
    expect(cpu).toMatch(/^reactant-cpu-plan_v1-none-cpu-none-[0-9a-f]{8}$/);
    // Two build ids that slug identically still get different partitions through the hash.
    expect(partitionName({ ...BASE_IDENTITY, buildId: "xla 0.5.1 plugin:0A1B2C3D" })).not.toBe(name);
  });

  test("entry names carry the module hash and the options hash", () => {
    const name = entryName(src, opts);
    expect(parseEntryName(name)).toEqual({ moduleSha256: src, optionsHashPrefix: opts.slice(0, 16) });
    expect(optionsHash({ xlaFlags: { b: 1, a: 2 } })).toBe(optionsHash({ xlaFlags: { a: 2, b: 1 } }));
    expect(optionsHash({ deterministic: true })).not.toBe(optionsHash({ deterministic: false }));
    expect(optionsHash({}, "extra")).not.toBe(optionsHash({}));
    expect(optionsHash({}, "", { XLA_FLAGS: "--xla_gpu_autotune_level=0" })).not.toBe(optionsHash({}, "", {}));
    expect(optionsHash({}, "", { XLA_FLAGS: "" })).toBe(optionsHash({}, "", {}));
    expect(parseEntryName("nonsense.xprog")).toBeNull();
  });
});

describe("options hash", () => {
  test("keepLocations joins the key only when set, so programs cached before the option stay found", () => {
    const env = {};
    // The canonical options of a default compile, written out as they were before keepLocations.
    const before = sha256Hex(`${JSON.stringify({ deterministic: false, device: 0, xlaFlags: {} })}\n`);
    expect(optionsHash({}, "", env)).toBe(before);
    expect(optionsHash({ keepLocations: false }, "", env)).toBe(before);
    expect(optionsHash({ keepLocations: true }, "", env)).not.toBe(before);
  });
});

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The example bundles shipped with the repository (real exports, not fixtures made for tests). */
export const EXAMPLES_DIR = join(import.meta.dir, "..", "..", "..", "..", "examples", "models");
export const EXAMPLE_NAMES = ["mlp", "cnn", "transformer"] as const;

export interface TempRepository {
  readonly root: string;
  /** Copies an example bundle into the repository, optionally under another directory name. */
  copy(example: string, as?: string): string;
  dispose(): void;
}

export function tempRepository(): TempRepository {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-core-"));
  return {
    root,
    copy(example, as = example) {
      const dir = join(root, as);
      cpSync(join(EXAMPLES_DIR, example), dir, { recursive: true });
      return dir;
    },
    dispose() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function editText(path: string, edit: (text: string) => string): void {
  const before = readFileSync(path, "utf8");
  const after = edit(before);
  if (after === before) throw new Error(`edit of ${path} changed nothing: the test would not test anything`);
  writeFileSync(path, after);
}

/** Edits only the `func.func @main` line of a module, leaving the body alone. */
export function editMain(path: string, edit: (line: string) => string): void {
  editText(path, (text) =>
    text
      .split("\n")
      .map((l) => (l.includes("@main(") ? edit(l) : l))
      .join("\n"),
  );
}

/** A safetensors file split into its JSON header and data section, for tests that corrupt one. */
export interface SafetensorsParts {
  header: Record<string, unknown>;
  data: Uint8Array;
}

export function readSafetensorsParts(path: string): SafetensorsParts {
  const bytes = readFileSync(path);
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString("utf8")) as Record<string, unknown>;
  return { header, data: new Uint8Array(bytes.subarray(8 + length)) };
}

export function writeSafetensorsParts(path: string, parts: SafetensorsParts, declaredLength?: number): void {
  const json = Buffer.from(JSON.stringify(parts.header), "utf8");
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(declaredLength ?? json.length));
  writeFileSync(path, Buffer.concat([prefix, json, parts.data]));
}

/**
 * Rewrites the bundle manifest's provenance.weights_sha256 to the weights file's hash, as an
 * exporter does: for tests that change the weights on purpose and test something else.
 */
export function refreshWeightsHash(bundleDir: string): void {
  const sha = new Bun.CryptoHasher("sha256").update(readFileSync(join(bundleDir, "weights.safetensors"))).digest("hex");
  editText(join(bundleDir, "manifest.yaml"), (text) =>
    text.replace(/weights_sha256: "[0-9a-f]{64}"/, `weights_sha256: "${sha}"`),
  );
}

/** Builds a safetensors file from named tensors (raw little-endian bytes), in the given order. */
export function buildSafetensors(
  tensors: readonly { name: string; dtype: string; shape: number[]; bytes: Uint8Array }[],
  metadata?: Record<string, string>,
): Buffer {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.byteLength] };
    offset += t.bytes.byteLength;
  }
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([prefix, json, ...tensors.map((t) => Buffer.from(t.bytes))]);
}

import { statSync } from "node:fs";
import { basename } from "node:path";
import { bytesAsTyped } from "../dtypes.ts";
import { XlaserveError } from "../errors.ts";
import type { HostTensor } from "../tensor.ts";
import type { BundleFileRef } from "./problems.ts";
import { HEADER_LENGTH_BYTES, corrupt, readSafetensorsLayout } from "./safetensors-header.ts";
import type { WeightEntry, WeightsFile } from "./types.ts";

/**
 * Reader for the safetensors format: an 8-byte little-endian header length, a JSON header, then
 * the raw tensor bytes. The file is memory-mapped privately (copy-on-write), so tensors are views
 * into the page cache and a stray write to a view never reaches the file.
 * The header is validated by safetensors-header.ts before any tensor is handed out.
 */

export interface OpenSafetensorsOptions {
  /** Bundle name for error messages; defaults to the parent directory's name. */
  readonly bundle?: string;
  /**
   * Require `__metadata__.argument_order` when the file holds tensors (weights.safetensors does;
   * reference files do not).
   */
  readonly requireArgumentOrder?: boolean;
}

export interface SafetensorsFile extends WeightsFile {
  /** `__metadata__` as stored (string values only). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Tensor names in data-offset order. */
  readonly names: readonly string[];
}

export function openSafetensors(path: string, options: OpenSafetensorsOptions = {}): SafetensorsFile {
  const where: BundleFileRef = { bundle: options.bundle ?? basename(dirnameOf(path)), file: basename(path) };
  const bytes = mapFile(path, where);
  const layout = readSafetensorsLayout(bytes, options.requireArgumentOrder ?? false, where);
  return new MappedSafetensors(path, where, bytes, layout.metadata, layout.entries, layout.argumentOrder);
}

function dirnameOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "." : path.slice(0, slash);
}

function mapFile(path: string, where: BundleFileRef): Uint8Array {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile()) {
    throw new XlaserveError("NOT_FOUND", `bundle "${where.bundle}", ${where.file}: ${path} is not a file`, {
      bundle: where.bundle,
      file: where.file,
      field: "file",
    });
  }
  const size = stat.size;
  if (size < HEADER_LENGTH_BYTES) {
    // mmap of an empty file fails with EINVAL; report the real problem instead.
    throw corrupt(where, "header", `file is ${size} bytes, shorter than the 8-byte header length`);
  }
  try {
    return Bun.mmap(path, { shared: false });
  } catch (cause) {
    throw new XlaserveError(
      "WEIGHTS_CORRUPT",
      `bundle "${where.bundle}", ${where.file}: cannot map the file: ${(cause as Error).message}`,
      { bundle: where.bundle, file: where.file, field: "file" },
      { cause },
    );
  }
}

class MappedSafetensors implements SafetensorsFile {
  readonly tensors: ReadonlyMap<string, WeightEntry>;
  readonly names: readonly string[];
  readonly totalBytes: number;
  #hash: string | undefined;

  constructor(
    readonly path: string,
    private readonly where: BundleFileRef,
    private readonly bytes: Uint8Array,
    readonly metadata: Readonly<Record<string, string>>,
    entries: readonly WeightEntry[],
    readonly argumentOrder: readonly string[],
  ) {
    this.tensors = new Map(entries.map((e) => [e.name, e]));
    this.names = entries.map((e) => e.name);
    this.totalBytes = entries.reduce((sum, e) => sum + e.byteLength, 0);
  }

  async sha256(): Promise<string> {
    this.#hash ??= new Bun.CryptoHasher("sha256").update(this.bytes).digest("hex");
    return this.#hash;
  }

  tensor(name: string): HostTensor {
    const entry = this.tensors.get(name);
    if (!entry) {
      throw new XlaserveError("NOT_FOUND", `bundle "${this.where.bundle}", ${this.where.file}: no tensor "${name}"`, {
        bundle: this.where.bundle,
        file: this.where.file,
        tensor: name,
      });
    }
    const view = this.bytes.subarray(entry.byteOffset, entry.byteOffset + entry.byteLength);
    return { dtype: entry.dtype, shape: entry.shape, data: bytesAsTyped(entry.dtype, view) };
  }
}

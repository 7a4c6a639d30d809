import { basename } from "node:path";
import { bytesAsTyped } from "../dtypes.ts";
import { XlaserveError } from "../errors.ts";
import type { HostTensor } from "../tensor.ts";
import { type BundleFileRef, bundleError } from "./problems.ts";
import { readSafetensorsLayout } from "./safetensors-header.ts";
import { type StableRead, readFileStable, readFileStableSync } from "./stable-read.ts";
import type { WeightEntry, WeightsFile } from "./types.ts";

/**
 * Reader for the safetensors format: an 8-byte little-endian header length, a JSON header, then
 * the raw tensor bytes. The file is read whole into private memory (stable-read.ts says why it is
 * not memory-mapped), so tensors are views of bytes nothing else can change, and a write to a view
 * never reaches the file. The header is validated by safetensors-header.ts before any tensor is
 * handed out: its sizes and offsets must cover the bytes read exactly.
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

/** Files whose contents were already checked against a hash: skips hashing them again. */
export interface VerifiedFiles {
  has(key: string): boolean;
  add(key: string): void;
}

export interface ReadSafetensorsOptions extends OpenSafetensorsOptions {
  /**
   * The sha256 (hex) the file must have (a manifest's provenance.weights_sha256): a file that is
   * incomplete, or not the one the manifest describes, is refused before anything uses it.
   */
  readonly expectSha256?: string;
  /** Remembers files (by device, inode, size and mtime) that matched their expected hash. */
  readonly verified?: VerifiedFiles;
}

export interface SafetensorsFile extends WeightsFile {
  /** `__metadata__` as stored (string values only). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Tensor names in data-offset order. */
  readonly names: readonly string[];
}

/** Reads a safetensors file at once, on this thread (reference files, tools, tests). */
export function openSafetensors(path: string, options: OpenSafetensorsOptions = {}): SafetensorsFile {
  const where = whereOf(path, options);
  return fromRead(path, where, readFileStableSync(path, where), options);
}

/**
 * Reads a safetensors file a few MiB per read, off the event loop, hashing it on the way when
 * `expectSha256` is given (unless `verified` knows the file unchanged since it last matched).
 */
export async function readSafetensors(path: string, options: ReadSafetensorsOptions = {}): Promise<SafetensorsFile> {
  const where = whereOf(path, options);
  const expected = options.expectSha256?.toLowerCase();
  const read = await readFileStable(
    path,
    where,
    (id) => expected !== undefined && !options.verified?.has(`${id}:${expected}`),
  );
  // The header's own checks first: they name the broken field, a hash mismatch cannot.
  const file = fromRead(path, where, read, options);
  if (expected && read.sha256 !== undefined) {
    if (read.sha256 !== expected) {
      throw bundleError(
        "WEIGHTS_CORRUPT",
        where,
        "file",
        `sha256 ${read.sha256} does not match the manifest's provenance.weights_sha256 ${expected}: the file is incomplete or not the one the manifest describes`,
        { expected, actual: read.sha256 },
      );
    }
    options.verified?.add(`${read.identity}:${expected}`);
  }
  return file;
}

function fromRead(path: string, where: BundleFileRef, read: StableRead, options: OpenSafetensorsOptions) {
  const layout = readSafetensorsLayout(read.bytes, options.requireArgumentOrder ?? false, where);
  return new ReadSafetensors(
    path,
    where,
    read.bytes,
    layout.metadata,
    layout.entries,
    layout.argumentOrder,
    read.sha256,
  );
}

function whereOf(path: string, options: OpenSafetensorsOptions): BundleFileRef {
  return { bundle: options.bundle ?? basename(dirnameOf(path)), file: basename(path) };
}

function dirnameOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "." : path.slice(0, slash);
}

class ReadSafetensors implements SafetensorsFile {
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
    sha256?: string,
  ) {
    this.#hash = sha256;
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

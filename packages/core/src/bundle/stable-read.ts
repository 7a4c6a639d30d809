import { type BigIntStats, closeSync, fstatSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import { XlaserveError } from "../errors.ts";
import { type BundleFileRef, bundleError } from "./problems.ts";

/**
 * A whole file read into private memory under one open descriptor, refused when it changed while
 * being read. Weights are read, not memory-mapped: a mapped file that shrinks (cp or scp over the
 * live file truncates it first) turns the next access of a page past its new end into SIGBUS, which
 * kills the whole process; read(2) just returns fewer bytes, and that is an error here.
 */
export interface StableRead {
  readonly bytes: Uint8Array;
  /** dev:ino:size:mtime of what was read: equal identities mean the same file contents. */
  readonly identity: string;
  /** sha256 (hex) of the bytes, when asked for. */
  readonly sha256?: string;
}

/** Read this many bytes per call: each read runs off the event loop, which serves between them. */
const CHUNK_BYTES = 8 << 20;

/**
 * `hashIf` is asked with the identity of the open file before anything is read: true hashes the
 * bytes on the way.
 */
export async function readFileStable(
  path: string,
  where: BundleFileRef,
  hashIf: (identity: string) => boolean,
): Promise<StableRead> {
  const file = await open(path, "r").catch((cause) => {
    throw unreadable(where, path, cause);
  });
  try {
    const before = await file.stat({ bigint: true });
    const bytes = allocFor(before, where, path);
    const identity = identityOf(before);
    const hasher = hashIf(identity) ? new Bun.CryptoHasher("sha256") : null;
    for (let at = 0; at < bytes.length; ) {
      const { bytesRead } = await file.read(bytes, at, Math.min(CHUNK_BYTES, bytes.length - at), at);
      if (bytesRead === 0) throw changed(where, `it shrank to ${at} of ${bytes.length} bytes`);
      hasher?.update(bytes.subarray(at, at + bytesRead));
      at += bytesRead;
    }
    checkUnchanged(before, await file.stat({ bigint: true }), where);
    return { bytes, identity, ...(hasher ? { sha256: hasher.digest("hex") } : {}) };
  } finally {
    await file.close();
  }
}

export function readFileStableSync(path: string, where: BundleFileRef): StableRead {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (cause) {
    throw unreadable(where, path, cause);
  }
  try {
    const before = fstatSync(fd, { bigint: true });
    const bytes = allocFor(before, where, path);
    for (let at = 0; at < bytes.length; ) {
      const n = readSync(fd, bytes, at, Math.min(CHUNK_BYTES, bytes.length - at), at);
      if (n === 0) throw changed(where, `it shrank to ${at} of ${bytes.length} bytes`);
      at += n;
    }
    checkUnchanged(before, fstatSync(fd, { bigint: true }), where);
    return { bytes, identity: identityOf(before) };
  } finally {
    closeSync(fd);
  }
}

/** The smallest file the caller can make sense of (the safetensors header length). */
const MIN_BYTES = 8;

function allocFor(stat: BigIntStats, where: BundleFileRef, path: string): Uint8Array {
  if (!stat.isFile()) {
    throw new XlaserveError("NOT_FOUND", `bundle "${where.bundle}", ${where.file}: ${path} is not a file`, {
      bundle: where.bundle,
      file: where.file,
      field: "file",
    });
  }
  const size = Number(stat.size);
  if (size < MIN_BYTES) {
    throw bundleError(
      "WEIGHTS_CORRUPT",
      where,
      "header",
      `file is ${size} bytes, shorter than the 8-byte header length`,
    );
  }
  return new Uint8Array(size);
}

function checkUnchanged(before: BigIntStats, after: BigIntStats, where: BundleFileRef): void {
  if (after.size !== before.size) throw changed(where, `its size went from ${before.size} to ${after.size} bytes`);
  if (after.mtimeNs !== before.mtimeNs) throw changed(where, "it was written to");
}

function identityOf(s: BigIntStats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
}

function changed(where: BundleFileRef, how: string): XlaserveError {
  return bundleError(
    "WEIGHTS_CORRUPT",
    where,
    "file",
    `changed while it was being read (${how}): it is still being written`,
    { changing: true },
  );
}

function unreadable(where: BundleFileRef, path: string, cause: unknown): XlaserveError {
  const code = (cause as NodeJS.ErrnoException).code;
  return new XlaserveError(
    code === "ENOENT" ? "NOT_FOUND" : "WEIGHTS_CORRUPT",
    `bundle "${where.bundle}", ${where.file}: ${code === "ENOENT" ? `${path} is not a file` : `cannot read ${path}: ${(cause as Error).message}`}`,
    { bundle: where.bundle, file: where.file, field: "file" },
    { cause },
  );
}

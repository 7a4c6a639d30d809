import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Prefix and suffix of temporary files, so scans skip them and cleanup can find them. */
export const TEMP_PREFIX = ".tmp-";

function fsyncDir(dir: string): void {
  // The rename is durable only once the directory is synced; some filesystems refuse to
  // open a directory for this, which costs durability on a crash but never correctness.
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* best effort */
  }
}

/**
 * Writes a file so readers see the old content or the new, never a mix: write a temporary file
 * in the same directory (same filesystem, so rename is atomic), fsync it, rename it over the
 * target, fsync the directory. `durable: false` skips the fsyncs, for copies of data kept
 * elsewhere too: a copy torn by a crash fails its checks on read and is fetched again.
 */
export function writeFileAtomic(path: string, bytes: Uint8Array | string, opts: { durable?: boolean } = {}): void {
  const durable = opts.durable ?? true;
  const dir = dirname(path);
  const tmp = join(dir, `${TEMP_PREFIX}${basename(path)}.${process.pid}.${crypto.randomUUID().slice(0, 8)}`);
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const fd = openSync(tmp, "w", 0o644);
  try {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    if (durable) fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  if (durable) fsyncDir(dir);
}

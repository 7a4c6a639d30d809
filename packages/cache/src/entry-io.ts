import { closeSync, fstatSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { type DecodeFailure, type EntryHeader, MAX_HEADER_BYTES, decodeHeader } from "./entry-format.ts";

/** An entry file's bytes plus the inode they came from (to remove exactly that file later). */
export interface ReadEntry {
  readonly bytes: Uint8Array;
  readonly ino: number;
}

function readAll(fd: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let off = 0;
  while (off < length) {
    const n = readSync(fd, out, off, length - off, off);
    if (n === 0) break;
    off += n;
  }
  return off === length ? out : out.subarray(0, off);
}

/** The whole file, or null when there is none. Other I/O errors propagate. */
export function readEntryFile(path: string): ReadEntry | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    // ENOTDIR: something that is not a directory stands where `.cache/` or the partition should.
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw e;
  }
  try {
    const st = fstatSync(fd);
    return { bytes: readAll(fd, st.size), ino: st.ino };
  } finally {
    closeSync(fd);
  }
}

/** Only the header, for rebuilding the index without reading payloads. */
export function readEntryHeader(
  path: string,
):
  | { ok: true; header: EntryHeader; size: number }
  | { ok: false; reason: DecodeFailure | "unreadable"; detail: string } {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    return { ok: false, reason: "unreadable", detail: (e as Error).message };
  }
  try {
    const size = fstatSync(fd).size;
    const decoded = decodeHeader(readAll(fd, Math.min(size, MAX_HEADER_BYTES)), size);
    return decoded.ok ? { ok: true, header: decoded.header, size } : decoded;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes a bad entry only if the path still holds the file that was judged (same inode): a
 * concurrent process may already have replaced it with a good one.
 */
export function removeIfSame(path: string, ino: number | null): void {
  try {
    if (ino !== null && statSync(path).ino !== ino) return;
    rmSync(path, { force: true, recursive: true });
  } catch {
    /* already gone */
  }
}

/**
 * The engine thread's mappings of the files that large inputs stay in (run-wire's IN_FILE
 * tensors: system shared-memory regions the main thread registered), so a run reads them in
 * place. The path names the main thread's open descriptor of the object (/proc/self/fd/N), so
 * this is the very object it registered even if the client has since unlinked or replaced the
 * name. A mapping is kept per path and checked before each use: the same file (a descriptor
 * number is reused once the region is unregistered) and still long enough, since touching a
 * mapping past the end of a file that shrank would be SIGBUS rather than an error.
 */
import { statSync } from "node:fs";
import { XlaserveError } from "@xlaserve/core";
import type { OpenMapped } from "./run-wire.ts";

interface Mapping {
  readonly dev: number;
  readonly ino: number;
  readonly bytes: Uint8Array;
}

const mappings = new Map<string, Mapping>();

export const openMappedInput: OpenMapped = (path, offset, byteLength) => {
  let stat: { dev: number; ino: number; size: number };
  try {
    stat = statSync(path);
  } catch (error) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `the shared-memory object of an input is gone (${(error as NodeJS.ErrnoException).code ?? error})`,
    );
  }
  const end = offset + byteLength;
  if (stat.size < end) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `the shared-memory object of an input shrank to ${stat.size} bytes; the input needs bytes up to ${end}`,
    );
  }
  let mapping = mappings.get(path);
  if (!mapping || mapping.dev !== stat.dev || mapping.ino !== stat.ino || mapping.bytes.byteLength < end) {
    mapping = { dev: stat.dev, ino: stat.ino, bytes: Bun.mmap(path, { shared: true, size: stat.size }) };
    mappings.set(path, mapping);
  }
  return mapping.bytes.subarray(offset, end);
};

/** The typed errors the heavy kernels raise, so every message names the op and the problem. */
import { XlaserveError } from "@xlaserve/core";

/** Bad attributes or shapes: the program is malformed. */
export function invalid(op: string, message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("INVALID_ARGUMENT", `${op}: ${message}`, { op, ...details });
}

/** A valid program this engine cannot run (an element type a kernel has no path for). */
export function unsupported(op: string, message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("UNSUPPORTED", `${op}: ${message}`, { op, ...details });
}

/** Checks that `dims` are distinct axes of a rank-`rank` array. */
export function checkAxes(op: string, what: string, dims: readonly number[], rank: number): void {
  const seen = new Set<number>();
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0 || d >= rank)
      throw invalid(op, `${what} has axis ${d} outside rank ${rank}`, { [what]: dims });
    if (seen.has(d)) throw invalid(op, `${what} repeats axis ${d}`, { [what]: dims });
    seen.add(d);
  }
}

/** Checks an attribute array has one entry per spatial / window axis. */
export function checkLength(op: string, what: string, values: readonly unknown[], length: number): void {
  if (values.length !== length) throw invalid(op, `${what} has ${values.length} entries, expected ${length}`);
}

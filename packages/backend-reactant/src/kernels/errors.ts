import { XlaserveError } from "@xlaserve/core";

/** A valid program outside what the engine runs (an op, type or attribute it has no path for). */
export function unsupported(op: string, message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("UNSUPPORTED", `${op}: ${message}`, { op, ...details });
}

/** A program whose attributes or shapes break the op's rules. */
export function invalidProgram(op: string, message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("COMPILE_FAILED", `${op}: ${message}`, { op, ...details });
}

/** A failure while running (bad argument shapes, a kernel that cannot complete). */
export function executeFailed(op: string, message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("EXECUTE_FAILED", `${op}: ${message}`, { op, ...details });
}

import { ModuleError } from "@xlaserve/stablehlo/errors.ts";

/**
 * Typed errors with stable codes. Codes are part of the public contract: logs, the REST API's
 * error bodies and tests match on them, so a code is never renamed.
 */

export const ERROR_CODES = {
  BUNDLE_INVALID: "a bundle's manifest or layout breaks the format's rules",
  BUNDLE_NOT_FOUND: "no bundle at the given path",
  WEIGHTS_CORRUPT: "weights.safetensors is unreadable or inconsistent",
  MODULE_INVALID: "a StableHLO module cannot be read",
  MODULE_SIGNATURE_MISMATCH: "a module's @main signature disagrees with manifest and weights",
  CONFIG_INVALID: "the configuration has invalid fields",
  PLUGIN_NOT_FOUND: "no PJRT plugin could be found or opened",
  PLUGIN_VERSION_MISMATCH: "the plugin's PJRT API version or table layout is not one the bindings know",
  PJRT_ERROR: "a PJRT call returned an error",
  COMPILE_FAILED: "a program failed to compile",
  COMPILER_CRASHED: "the compiler process died while compiling",
  EXECUTE_FAILED: "a program failed while running",
  UNSUPPORTED: "the backend does not support this operation or type",
  CACHE_CORRUPT: "a cache entry failed its checks",
  CACHE_PARTITION_MISMATCH: "a cache entry belongs to another backend identity",
  OUT_OF_MEMORY: "the device or budget cannot hold the request",
  QUEUE_FULL: "a model's request queue is full",
  DEADLINE_EXCEEDED: "the request's deadline passed before it could run",
  SHUTTING_DOWN: "the worker is draining and accepts no new work",
  UNAUTHORIZED: "the call needs a valid bearer token",
  INVALID_ARGUMENT: "an argument is malformed",
  NOT_FOUND: "the requested object does not exist",
  UNAVAILABLE: "the object exists but is not ready",
  DISPOSED: "the object was already disposed",
  INTERNAL: "an invariant was broken",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class XlaserveError extends Error {
  readonly code: ErrorCode;
  /** Facts that locate the problem: bundle, file, field, tensor, plugin path... */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = "XlaserveError";
    this.code = code;
    this.details = details;
  }

  toJSON(): { code: ErrorCode; message: string; details: Readonly<Record<string, unknown>> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isXlaserveError(value: unknown, code?: ErrorCode): value is XlaserveError {
  return value instanceof XlaserveError && (code === undefined || value.code === code);
}

/** Wraps anything thrown into an XlaserveError, keeping the original as `cause`. */
export function asXlaserveError(value: unknown, fallback: ErrorCode = "INTERNAL"): XlaserveError {
  if (value instanceof XlaserveError) return value;
  // The program model sits below core and throws its own class with the same codes.
  if (value instanceof ModuleError)
    return new XlaserveError(value.code, value.message, { ...value.details }, { cause: value });
  const message = value instanceof Error ? value.message : String(value);
  return new XlaserveError(fallback, message, {}, { cause: value });
}

/**
 * Errors of reading a module. This package sits below core, so it cannot throw core's
 * XlaserveError; the codes are the same stable codes, and core's `asXlaserveError` turns a
 * ModuleError into an XlaserveError keeping code, message and details.
 */

export type ModuleErrorCode = "MODULE_INVALID" | "UNSUPPORTED";

export class ModuleError extends Error {
  readonly code: ModuleErrorCode;
  /** Facts that locate the problem: origin, line, column, offset, the offending text... */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ModuleErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = "ModuleError";
    this.code = code;
    this.details = details;
  }
}

export function isModuleError(value: unknown, code?: ModuleErrorCode): value is ModuleError {
  return value instanceof ModuleError && (code === undefined || value.code === code);
}

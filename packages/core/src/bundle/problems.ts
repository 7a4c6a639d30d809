import { type ErrorCode, XlaserveError } from "../errors.ts";

/**
 * Where in a bundle a problem sits. Every loader error carries these facts in its details and
 * its message, so an operator can find the broken line without reading the loader's code.
 */
export interface BundleFileRef {
  /** The bundle (directory) name. */
  readonly bundle: string;
  /** File name inside the bundle ("manifest.yaml", "model.b8.mlir"). */
  readonly file: string;
}

/** Builds an error whose message starts with `bundle "x", file: field:` and whose details repeat them. */
export function bundleError(
  code: ErrorCode,
  where: BundleFileRef,
  field: string,
  problem: string,
  extra: Record<string, unknown> = {},
): XlaserveError {
  const location = field ? `${where.file}: ${field}` : where.file;
  return new XlaserveError(code, `bundle "${where.bundle}", ${location}: ${problem}`, {
    bundle: where.bundle,
    file: where.file,
    field,
    ...extra,
  });
}

export function bundleInvalid(where: BundleFileRef, field: string, problem: string): XlaserveError {
  return bundleError("BUNDLE_INVALID", where, field, problem);
}

/** Short printable form of a parsed YAML/JSON value for error messages. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return JSON.stringify(value);
  return `${typeof value} ${String(value)}`;
}

import type { ErrorCode } from "@xlaserve/core";

/**
 * What the cache reports instead of throwing: something on disk was wrong, was removed or
 * repaired, and the caller carries on (the worker logs these).
 */
export type CacheWarningKind =
  | "corrupt-entry"
  | "foreign-entry"
  | "wrong-format"
  | "deserialize-failed"
  | "write-failed"
  | "stale-lock"
  | "module-changed"
  | "hashes-file-invalid"
  | "index-repaired"
  | "index-reset"
  | "fleet-unavailable"
  | "fleet-bad-blob";

export interface CacheWarning {
  readonly kind: CacheWarningKind;
  readonly code: ErrorCode;
  readonly message: string;
  /** The file concerned, when there is one. */
  readonly path?: string;
  /** Machine-readable cause ("payload-checksum", "truncated", "buildId differs"...). */
  readonly reason?: string;
  readonly bundle?: string;
}

export type WarningSink = (warning: CacheWarning) => void;

/** PJRT_Error_Code values (absl status codes), by number, for messages and details. */
export const PJRT_ERROR_CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

export function pjrtCodeName(code: number): string {
  return PJRT_ERROR_CODE_NAMES[code] ?? `CODE_${code}`;
}

export const PJRT_CODE_RESOURCE_EXHAUSTED = 8;

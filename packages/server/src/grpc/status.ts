import { type ErrorCode, asXlaserveError } from "@xlaserve/core";
import { status } from "@grpc/grpc-js";
import { HttpError } from "../http-error.ts";
import type { GrpcError } from "./transport/calls.ts";

/**
 * The gRPC status for each stable error code, as Triton maps its own errors: a malformed request
 * INVALID_ARGUMENT, an unknown model NOT_FOUND, a model not ready or a draining worker
 * UNAVAILABLE (try another worker), a full queue or the device out of memory RESOURCE_EXHAUSTED.
 * Codes absent here are server-side faults (INTERNAL).
 */
const STATUS_BY_CODE: Partial<Record<ErrorCode, status>> = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  UNAVAILABLE: status.UNAVAILABLE,
  SHUTTING_DOWN: status.UNAVAILABLE,
  QUEUE_FULL: status.RESOURCE_EXHAUSTED,
  OUT_OF_MEMORY: status.RESOURCE_EXHAUSTED,
  DEADLINE_EXCEEDED: status.DEADLINE_EXCEEDED,
  UNAUTHORIZED: status.UNAUTHENTICATED,
  UNSUPPORTED: status.UNIMPLEMENTED,
};

/** The few REST-only answers (HttpError) that reach shared code, by HTTP status. */
const STATUS_BY_HTTP: Record<number, status> = {
  401: status.UNAUTHENTICATED,
  403: status.PERMISSION_DENIED,
  413: status.RESOURCE_EXHAUSTED,
  415: status.INVALID_ARGUMENT,
  499: status.CANCELLED,
};

export function grpcStatusOf(error: unknown): status {
  if (error instanceof HttpError) return STATUS_BY_HTTP[error.status] ?? status.INTERNAL;
  return STATUS_BY_CODE[asXlaserveError(error).code] ?? status.INTERNAL;
}

/** "INVALID_ARGUMENT", "OK", ...: the status label of the request metrics. */
export function statusName(code: status): string {
  return status[code] ?? String(code);
}

/** What a handler's callback takes: the status and the error's own message as details. */
export function serviceError(error: unknown): GrpcError {
  return { code: grpcStatusOf(error), details: (error as Error)?.message ?? String(error) };
}

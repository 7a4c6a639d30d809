import { type ErrorCode, XlaserveError } from "@xlaserve/core";

/**
 * Maps the stable error codes to HTTP statuses, following Triton's mapping where it has one.
 * Codes absent here are server-side faults (500).
 */
const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  SHUTTING_DOWN: 503,
  QUEUE_FULL: 429,
  DEADLINE_EXCEEDED: 504,
  UNAUTHORIZED: 401,
  OUT_OF_MEMORY: 507,
};

export function statusForCode(code: ErrorCode): number {
  return STATUS_BY_CODE[code] ?? 500;
}

/**
 * An error that carries its HTTP status directly, for the few answers that have no error code of
 * their own (413 body too large, 403 load/unload disabled, 405...).
 */
export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "HttpError";
    this.status = status;
  }
}

/**
 * The client hung up before its request was whole (nginx's 499 "client closed request"). Nobody
 * reads the answer; the status keeps such requests apart from server faults in the metrics and
 * the logs.
 */
export const CLIENT_CLOSED = 499;

export function clientClosed(): HttpError {
  return new HttpError(CLIENT_CLOSED, "the client closed the connection before the request was answered");
}

export function badRequest(message: string, details: Record<string, unknown> = {}): XlaserveError {
  return new XlaserveError("INVALID_ARGUMENT", message, details);
}

/** Every error answer is {"error": "..."} (KServe v2's error object), as JSON. */
export function errorResponse(status: number, message: string, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify({ error: message }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

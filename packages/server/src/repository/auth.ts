import { timingSafeEqual } from "node:crypto";
import { HttpError } from "../http-error.ts";

const encoder = new TextEncoder();

/**
 * Load and unload change what the worker serves, so they need the configured bearer token; with
 * no token configured they are off entirely rather than open to anyone who can reach the port.
 */
export function requireBearer(token: string | undefined, authorization: string | null): void {
  if (token === undefined || token === "") {
    throw new HttpError(
      403,
      "model load/unload is disabled: set an auth token (XLASERVE_AUTH_TOKEN, --auth-token or server.authToken) to enable it",
    );
  }
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization.trim()) : null;
  if (!match) throw new HttpError(401, "load/unload need an Authorization: Bearer <token> header");
  const given = encoder.encode(match[1] as string);
  const expected = encoder.encode(token);
  // Constant-time comparison so the token cannot be guessed byte by byte from response times.
  if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) {
    throw new HttpError(401, "the bearer token is not valid");
  }
}

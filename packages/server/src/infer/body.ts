import { badRequest } from "../http-error.ts";
import { parseJsonLenient } from "./json-lenient.ts";

/** The two parts of an infer body: the JSON header and the binary tensor section after it. */
export interface SplitBody {
  readonly header: unknown;
  readonly binary: Uint8Array;
  /** Bytes of the JSON header (bounds how many elements its data can hold). */
  readonly headerBytes: number;
}

const HEADER_LENGTH = "inference-header-content-length";
const EMPTY = new Uint8Array(0);

/**
 * Splits the body at Inference-Header-Content-Length (the binary tensor data extension). Without
 * the header the whole body is the JSON request.
 */
export function splitBody(headerLength: string | null, bytes: Uint8Array): SplitBody {
  if (headerLength === null) {
    return {
      header: parseJsonLenient(bytes, "request body"),
      binary: EMPTY,
      headerBytes: bytes.byteLength,
    };
  }
  const trimmed = headerLength.trim();
  if (!/^\d+$/.test(trimmed)) {
    throw badRequest(`Inference-Header-Content-Length "${headerLength}" is not a non-negative integer`);
  }
  const length = Number(trimmed);
  if (length > bytes.byteLength) {
    throw badRequest(`Inference-Header-Content-Length ${length} is past the end of the ${bytes.byteLength}-byte body`);
  }
  if (length === 0) throw badRequest("Inference-Header-Content-Length is 0: the JSON request header is missing");
  return {
    header: parseJsonLenient(bytes.subarray(0, length), "request header"),
    binary: bytes.subarray(length),
    headerBytes: length,
  };
}

export { HEADER_LENGTH };

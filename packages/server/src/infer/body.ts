import { gunzipSync, inflateSync } from "node:zlib";
import { HttpError, badRequest } from "../http-error.ts";
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
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a request body within the size limit. Content-Length is checked before reading anything;
 * a chunked body is counted as it streams in, so an oversized one is cut off early.
 * Compressed bodies (tritonclient's request_compression_algorithm) are inflated within the same limit.
 */
export async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(Number(declared), maxBytes);
  let bytes: Uint8Array;
  if (declared !== null || !request.body) {
    bytes = new Uint8Array(await request.arrayBuffer());
  } else {
    bytes = await readStream(request.body, maxBytes);
  }
  if (bytes.byteLength > maxBytes) throw tooLarge(bytes.byteLength, maxBytes);
  const encoding = request.headers.get("content-encoding");
  if (encoding && encoding !== "identity") return inflate(encoding, bytes, maxBytes);
  return bytes;
}

async function readStream(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge(total, maxBytes, true);
    chunks.push(chunk);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

function inflate(encoding: string, bytes: Uint8Array, maxBytes: number): Uint8Array {
  const options = { maxOutputLength: maxBytes };
  try {
    if (encoding === "gzip") return gunzipSync(bytes, options);
    if (encoding === "deflate") return inflateSync(bytes, options);
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new HttpError(413, `the ${encoding} request body inflates past the limit of ${maxBytes} bytes`);
    }
    throw badRequest(`request body could not be decompressed as ${encoding}: ${(error as Error).message}`);
  }
  throw new HttpError(415, `Content-Encoding ${encoding} is not supported (use gzip, deflate or none)`);
}

function tooLarge(size: number, maxBytes: number, atLeast = false): HttpError {
  return new HttpError(
    413,
    `request body of ${atLeast ? "at least " : ""}${size} bytes exceeds the limit of ${maxBytes} bytes`,
  );
}

/**
 * Splits the body at Inference-Header-Content-Length (the binary tensor data extension). Without
 * the header the whole body is the JSON request.
 */
export function splitBody(headerLength: string | null, bytes: Uint8Array): SplitBody {
  if (headerLength === null) {
    return {
      header: parseJsonLenient(decodeText(bytes), "request body"),
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
    header: parseJsonLenient(decodeText(bytes.subarray(0, length)), "request header"),
    binary: bytes.subarray(length),
    headerBytes: length,
  };
}

function decodeText(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw badRequest("request JSON is not valid UTF-8");
  }
}

export { HEADER_LENGTH };

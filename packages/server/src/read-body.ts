import { gunzipSync, inflateSync } from "node:zlib";
import { HttpError, badRequest, clientClosed } from "./http-error.ts";

/**
 * Reads a request body within the size limit. Content-Length is checked before reading anything;
 * a chunked body is counted as it streams in, so an oversized one is cut off early.
 * Compressed bodies (tritonclient's request_compression_algorithm) are inflated within the same limit.
 */
export async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(Number(declared), maxBytes);
  let bytes: Uint8Array;
  try {
    if (declared !== null || !request.body) {
      bytes = new Uint8Array(await request.arrayBuffer());
    } else {
      bytes = await readStream(request.body, maxBytes);
    }
  } catch (error) {
    // A client that hung up mid-body is the client's doing, not a server fault.
    if (request.signal.aborted) throw clientClosed();
    throw error;
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

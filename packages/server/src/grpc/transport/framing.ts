/**
 * gRPC's message framing over HTTP/2 (the "Length-Prefixed-Message" of gRPC's PROTOCOL-HTTP2):
 * a 1-byte compressed flag, a 4-byte big-endian length, then the message.
 */
export const FRAME_HEADER_BYTES = 5;

/** Writes the 5-byte prefix of an uncompressed message of `length` bytes at `at`. */
export function writeFrameHeader(frame: Uint8Array, length: number, at = 0): void {
  frame[at] = 0;
  frame[at + 1] = length >>> 24;
  frame[at + 2] = (length >>> 16) & 0xff;
  frame[at + 3] = (length >>> 8) & 0xff;
  frame[at + 4] = length & 0xff;
}

/**
 * A message already written behind room for its prefix (`bytes` = prefix + message, the prefix
 * filled): the transport sends these bytes as they are, so an encoder that writes into them is
 * the only copy of the answer's bytes on the way out.
 */
export class Framed {
  constructor(readonly bytes: Buffer) {}
  get messageBytes(): number {
    return this.bytes.byteLength - FRAME_HEADER_BYTES;
  }
}

/** The frame of message bytes that were encoded without room for the prefix (one copy). */
export function frame(message: Uint8Array): Framed {
  const bytes = Buffer.allocUnsafe(message.byteLength + FRAME_HEADER_BYTES);
  writeFrameHeader(bytes, message.byteLength);
  bytes.set(message, FRAME_HEADER_BYTES);
  return new Framed(bytes);
}

export interface ReadMessage {
  readonly compressed: boolean;
  readonly bytes: Buffer;
}

/** Why reading a call's messages stopped: a message over the cap. */
export class OversizeMessage extends Error {
  constructor(
    readonly length: number,
    readonly limit: number,
  ) {
    super(`the request message is ${length} bytes, over this server's limit of ${limit} bytes`);
  }
}

/**
 * The messages of a request stream, from DATA chunks as they arrive. A message that lies within
 * one chunk is a view of it (no copy); one split across chunks is gathered into a buffer of its
 * exact size, allocated once its prefix is known (one copy). A prefix announcing more than
 * `limit` bytes throws OversizeMessage before anything of it is kept.
 */
export class MessageReader {
  /** A prefix split across chunks (made when one first is: most calls never need it). */
  private header: Buffer | undefined;
  private headerFill = 0;
  private body: Buffer | undefined;
  private bodyFill = 0;
  private compressed = false;

  constructor(private readonly limit: number) {}

  /** True while a message is partly read (the stream ending now cuts it short). */
  get partial(): boolean {
    return this.headerFill > 0 || this.body !== undefined;
  }

  push(chunk: Buffer, out: ReadMessage[]): void {
    let at = 0;
    const n = chunk.byteLength;
    while (at < n) {
      if (this.body === undefined) {
        if (this.headerFill === 0 && n - at >= FRAME_HEADER_BYTES) {
          const length = chunk.readUInt32BE(at + 1);
          const compressed = chunk[at] !== 0;
          if (length > this.limit) throw new OversizeMessage(length, this.limit);
          const start = at + FRAME_HEADER_BYTES;
          if (n - start >= length) {
            out.push({ compressed, bytes: chunk.subarray(start, start + length) });
            at = start + length;
            continue;
          }
          this.compressed = compressed;
          this.begin(length);
          at = start;
          continue;
        }
        this.header ??= Buffer.allocUnsafe(FRAME_HEADER_BYTES);
        const header = this.header;
        const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, n - at);
        chunk.copy(header, this.headerFill, at, at + take);
        this.headerFill += take;
        at += take;
        if (this.headerFill < FRAME_HEADER_BYTES) return;
        this.headerFill = 0;
        const length = header.readUInt32BE(1);
        if (length > this.limit) throw new OversizeMessage(length, this.limit);
        this.compressed = header[0] !== 0;
        this.begin(length);
        if (length === 0) this.finish(out);
        continue;
      }
      const body = this.body;
      const take = Math.min(body.byteLength - this.bodyFill, n - at);
      chunk.copy(body, this.bodyFill, at, at + take);
      this.bodyFill += take;
      at += take;
      if (this.bodyFill === body.byteLength) this.finish(out);
    }
  }

  private begin(length: number): void {
    this.body = Buffer.allocUnsafe(length);
    this.bodyFill = 0;
  }

  private finish(out: ReadMessage[]): void {
    out.push({ compressed: this.compressed, bytes: this.body as Buffer });
    this.body = undefined;
  }
}

import { ModuleError } from "../errors.ts";

/**
 * A bounds-checked cursor over MLIR bytecode. Every read checks what is left, so a truncated
 * or corrupt artifact fails with the absolute file offset and what was expected there, never
 * with an out-of-range read or a huge allocation.
 */
export class ByteReader {
  /** Absolute offset of the next byte, from the start of the file. */
  pos: number;
  readonly end: number;

  constructor(
    readonly bytes: Uint8Array,
    readonly origin: string,
    start = 0,
    end = bytes.length,
  ) {
    this.pos = start;
    this.end = end;
  }

  /** A reader over `length` bytes from here, which this reader skips. */
  sub(length: number, what: string): ByteReader {
    this.need(length, what);
    const r = new ByteReader(this.bytes, this.origin, this.pos, this.pos + length);
    this.pos += length;
    return r;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  atEnd(): boolean {
    return this.pos >= this.end;
  }

  fail(expected: string, at = this.pos): ModuleError {
    return bytecodeError(this.origin, at, expected);
  }

  need(count: number, what: string): void {
    if (count > this.end - this.pos) {
      throw this.fail(`${what} (${count} bytes, ${this.end - this.pos} left)`);
    }
  }

  byte(what = "a byte"): number {
    if (this.pos >= this.end) throw this.fail(`${what}, found the end of the data`);
    return this.bytes[this.pos++] as number;
  }

  take(length: number, what: string): Uint8Array {
    this.need(length, what);
    const out = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  /**
   * MLIR's prefix varint: the count of trailing zero bits of the first byte is the number of
   * further bytes; a zero first byte means eight full bytes follow. Exact up to 2^53.
   */
  varint(what = "a varint"): number {
    const first = this.byte(what);
    if (first & 1) return first >>> 1;
    if (first === 0) return Number(this.wideTail(what));
    let extra = 1;
    while (((first >>> extra) & 1) === 0) extra++;
    this.need(extra, what);
    let value = first >>> (extra + 1);
    let scale = 2 ** (8 - extra - 1);
    for (let i = 0; i < extra; i++) {
      value += (this.bytes[this.pos++] as number) * scale;
      scale *= 256;
    }
    return value;
  }

  /** The same varint as a full 64-bit unsigned value. */
  varintBig(what = "a varint"): bigint {
    const first = this.byte(what);
    if (first & 1) return BigInt(first >>> 1);
    if (first === 0) return this.wideTail(what);
    let extra = 1;
    while (((first >>> extra) & 1) === 0) extra++;
    this.need(extra, what);
    let value = BigInt(first >>> (extra + 1));
    let shift = BigInt(8 - extra - 1);
    for (let i = 0; i < extra; i++) {
      value |= BigInt(this.bytes[this.pos++] as number) << shift;
      shift += 8n;
    }
    return value;
  }

  private wideTail(what: string): bigint {
    const b = this.take(8, what);
    let v = 0n;
    for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(b[i] as number);
    return v;
  }

  /** Zigzag-decoded signed varint as a 64-bit value. */
  svarintBig(what = "a signed varint"): bigint {
    const u = this.varintBig(what);
    return (u >> 1n) ^ -(u & 1n);
  }

  /** Zigzag-decoded signed varint as a number (INT64_MIN, MLIR's dynamic size, stays exact). */
  svarint(what = "a signed varint"): number {
    const first = this.bytes[this.pos];
    if (first !== undefined && first & 1 && this.pos < this.end) {
      this.pos++;
      const u = first >>> 1;
      return u & 1 ? -((u + 1) >>> 1) : u >>> 1;
    }
    return Number(this.svarintBig(what));
  }

  /** A varint whose low bit is a flag: `(value << 1) | flag`. */
  varintFlag(what = "a varint"): [number, boolean] {
    const v = this.varint(what);
    return [Math.floor(v / 2), v % 2 === 1];
  }

  /** A count of things that each take at least `minBytes` bytes, checked against what is left. */
  count(what: string, minBytes = 1): number {
    const at = this.pos;
    const n = this.varint(what);
    if (n * minBytes > this.end - this.pos) {
      throw this.fail(`${what}: ${n} entries cannot fit in the ${this.end - this.pos} bytes left`, at);
    }
    return n;
  }

  nullTerminated(what: string): string {
    const start = this.pos;
    let i = start;
    while (i < this.end && this.bytes[i] !== 0) i++;
    if (i >= this.end) throw this.fail(`${what} ending in a NUL byte`);
    this.pos = i + 1;
    return decodeUtf8(this.bytes, start, i);
  }
}

const UTF8 = new TextDecoder();

/**
 * The UTF-8 text of bytes[start, end). Op names, attribute names and symbols are short ASCII,
 * which is read without a view and a call into the decoder for each.
 */
export function decodeUtf8(bytes: Uint8Array, start = 0, end = bytes.length): string {
  if (end - start <= 64) {
    let s = "";
    for (let i = start; i < end; i++) {
      const b = bytes[i] as number;
      if (b >= 0x80) return UTF8.decode(bytes.subarray(start, end));
      s += String.fromCharCode(b);
    }
    return s;
  }
  return UTF8.decode(bytes.subarray(start, end));
}

/** MODULE_INVALID naming the artifact, the absolute offset and what was expected there. */
export function bytecodeError(origin: string, offset: number, expected: string): ModuleError {
  return new ModuleError(
    "MODULE_INVALID",
    `${origin}: invalid MLIR bytecode at offset ${offset}: expected ${expected}`,
    {
      origin,
      offset,
      expected,
    },
  );
}

/**
 * The few protobuf wire-format pieces the compile options need: varints, length-delimited
 * fields (strings, bytes, nested messages) and 64-bit doubles. Fields are written in the order
 * given, which keeps the bytes (and so the cache key of the options) deterministic.
 */

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;

export class ProtoWriter {
  private readonly chunks: number[] = [];

  private varint(value: bigint): void {
    // Negative int64 values are written as their 64-bit two's complement (10 bytes), as protobuf does.
    let v = BigInt.asUintN(64, value);
    while (v >= 0x80n) {
      this.chunks.push(Number((v & 0x7fn) | 0x80n));
      v >>= 7n;
    }
    this.chunks.push(Number(v));
  }

  private tag(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
  }

  int(field: number, value: number | bigint): this {
    this.tag(field, WIRE_VARINT);
    this.varint(BigInt(value));
    return this;
  }

  bool(field: number, value: boolean): this {
    return this.int(field, value ? 1 : 0);
  }

  double(field: number, value: number): this {
    this.tag(field, WIRE_I64);
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, value, true);
    this.chunks.push(...bytes);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LEN);
    this.varint(BigInt(value.byteLength));
    this.chunks.push(...value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(new ArrayBuffer(this.chunks.length));
    out.set(this.chunks);
    return out;
  }
}

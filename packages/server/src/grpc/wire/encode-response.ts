/**
 * A ModelInferResponse written straight into one Buffer of its exact size: sizes first, then one
 * pass of writes, each tensor's bytes copied once from the result into the message. The bytes are
 * those protobuf-es writes for the same message (fields in number order, packed shapes, proto3
 * defaults left out, map entries with key and value); a test holds the two to that. Field
 * numbers are grpc_service.proto's.
 */

export interface WireHead {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
}

/** One InferParameter entry: string_param (3) or int64_param (2). */
export type WireParameter =
  | { readonly key: string; readonly string: string; readonly int64?: undefined }
  | { readonly key: string; readonly int64: number; readonly string?: undefined };

export interface WireOutput {
  readonly name: string;
  readonly datatype: string;
  /** Non-negative integers below 2^53. */
  readonly shape: readonly number[];
  readonly parameters: readonly WireParameter[];
  /** Its raw_output_contents entry (empty for an output written to shared memory). */
  readonly bytes: Uint8Array;
}

const LEN = 2;
const VARINT = 0;

/**
 * The message's bytes; with `wrapField`, those of a message whose field `wrapField` is this one
 * (ModelStreamInferResponse's infer_response), without a second copy. `room` bytes are left free
 * in front of the message (the transport's frame prefix goes there, so the frame is this buffer).
 */
export function encodeInferResponse(head: WireHead, outputs: readonly WireOutput[], wrapField = 0, room = 0): Buffer {
  const outputSizes = new Array<number>(outputs.length);
  let size = stringField(head.modelName) + stringField(head.modelVersion) + stringField(head.id);
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i] as WireOutput;
    const s = outputSize(o);
    outputSizes[i] = s;
    size += 1 + varintSize(s) + s + 1 + varintSize(o.bytes.byteLength) + o.bytes.byteLength;
  }
  const total = wrapField > 0 ? 1 + varintSize(size) + size : size;
  const w = new Writer(Buffer.allocUnsafe(room + total));
  w.pos = room;
  if (wrapField > 0) w.tag(wrapField, LEN).varint(size);
  w.string(1, head.modelName).string(2, head.modelVersion).string(3, head.id);
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i] as WireOutput;
    w.tag(5, LEN).varint(outputSizes[i] as number);
    w.string(1, o.name).string(2, o.datatype);
    if (o.shape.length > 0) {
      w.tag(3, LEN).varint(packedSize(o.shape));
      for (const d of o.shape) w.varint(d);
    }
    for (const p of o.parameters) {
      const value = parameterSize(p);
      w.tag(4, LEN).varint(entrySize(p.key, value));
      w.tag(1, LEN).varint(Buffer.byteLength(p.key)).raw(p.key);
      w.tag(2, LEN).varint(value);
      if (p.string !== undefined) w.tag(3, LEN).varint(Buffer.byteLength(p.string)).raw(p.string);
      else w.tag(2, VARINT).varint(p.int64);
    }
  }
  for (const o of outputs) w.tag(6, LEN).varint(o.bytes.byteLength).bytes(o.bytes);
  if (w.pos !== room + total) throw new Error(`response encoder wrote ${w.pos} bytes of ${total}`);
  return w.buffer;
}

function outputSize(o: WireOutput): number {
  let s = stringField(o.name) + stringField(o.datatype);
  if (o.shape.length > 0) {
    const packed = packedSize(o.shape);
    s += 1 + varintSize(packed) + packed;
  }
  for (const p of o.parameters) {
    const entry = entrySize(p.key, parameterSize(p));
    s += 1 + varintSize(entry) + entry;
  }
  return s;
}

function packedSize(shape: readonly number[]): number {
  let s = 0;
  for (const d of shape) s += varintSize(d);
  return s;
}

/** A map entry: key (1) and value (2), both always written. */
function entrySize(key: string, value: number): number {
  const k = Buffer.byteLength(key);
  return 1 + varintSize(k) + k + 1 + varintSize(value) + value;
}

/** An InferParameter holding one oneof member (written even when it is the default). */
function parameterSize(p: WireParameter): number {
  if (p.string !== undefined) {
    const n = Buffer.byteLength(p.string);
    return 1 + varintSize(n) + n;
  }
  return 1 + varintSize(p.int64);
}

/** A proto3 string field: left out when empty. Tags here are one byte (field numbers below 16). */
function stringField(s: string): number {
  if (s.length === 0) return 0;
  const n = Buffer.byteLength(s);
  return 1 + varintSize(n) + n;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

class Writer {
  pos = 0;
  constructor(readonly buffer: Buffer) {}

  tag(field: number, wire: number): this {
    this.buffer[this.pos++] = (field << 3) | wire;
    return this;
  }

  /** A non-negative integer below 2^53. */
  varint(n: number): this {
    const b = this.buffer;
    while (n >= 128) {
      b[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    b[this.pos++] = n;
    return this;
  }

  string(field: number, s: string): this {
    if (s.length === 0) return this;
    return this.tag(field, LEN).varint(Buffer.byteLength(s)).raw(s);
  }

  raw(s: string): this {
    this.pos += this.buffer.write(s, this.pos, "utf8");
    return this;
  }

  bytes(bytes: Uint8Array): this {
    this.buffer.set(bytes, this.pos);
    this.pos += bytes.byteLength;
    return this;
  }
}

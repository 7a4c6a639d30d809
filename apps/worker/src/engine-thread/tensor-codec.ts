/**
 * The tensors of the engine thread's packed messages (run-wire.ts has the layout): how one is
 * placed (inline bytes, a mapped file, a part of the message, rows joined from parts), sized,
 * written and read back.
 */
import {
  DTYPES,
  type HostTensor,
  bytesAsTyped,
  dtypeSize,
  elementCount,
  mappedFileOf,
  viewTyped,
} from "@xlaserve/core";

const DTYPE_INDEX = new Map<string, number>(DTYPES.map((d, i) => [d, i]));
/** Set in a tensor's dtype word when its bytes stay in a mapped file. */
const IN_FILE = 0x100;
/** Below this a tensor's bytes are cheaper to copy than a file mapping is to look up. */
export const IN_FILE_MIN_BYTES = 64 * 1024;
/** Set in a tensor's dtype word when its bytes are in one of the message's parts. */
const OUT_OF_LINE = 0x200;
/** From this size a tensor's bytes travel in a part of their own (transferred, or copied once). */
export const OUT_OF_LINE_MIN_BYTES = 64 * 1024;
/** Set in a tensor's dtype word when it is to be joined from rows in the message's parts. */
const ROWS = 0x400;

/** Where a tensor's bytes go: a mapped file, a part of the message, or inline (undefined). */
export type Placed =
  | { readonly path: Uint8Array; readonly offset: number }
  | { readonly part: number; readonly offset: number }
  | { readonly rows: readonly { part: number; offset: number; byteLength: number }[] };

/**
 * Maps `byteLength` bytes at `offset` of the file at `path` for reading in place (the engine
 * thread's side of IN_FILE tensors).
 */
export type OpenMapped = (path: string, offset: number, byteLength: number) => Uint8Array;

/** Where a call's input lives in a mapped file, when it is large enough to be sent that way. */
export function inFile(t: HostTensor): { path: Uint8Array; offset: number } | undefined {
  if (t.data.byteLength < IN_FILE_MIN_BYTES) return undefined;
  const at = mappedFileOf(t.data);
  return at && { path: utf8Encoder.encode(at.path), offset: at.offset };
}
export const utf8Encoder = new TextEncoder();
export const utf8Decoder = new TextDecoder();

export const align8 = (n: number) => (n + 7) & ~7;

export function tensorSize(t: HostTensor, placed?: Placed): number {
  const head = align8(8 + 8 * t.shape.length) + 8;
  if (!placed) return head + align8(t.data.byteLength);
  if ("rows" in placed) return head + 8 + 16 * placed.rows.length;
  return "path" in placed ? head + 8 + 8 + align8(placed.path.byteLength) : head + 8 + 8;
}

/** Writes words, f64s and byte runs at a moving offset. */
export class Writer {
  readonly view: DataView;
  readonly bytes: Uint8Array;
  at = 0;
  constructor(readonly buffer: ArrayBuffer) {
    this.view = new DataView(buffer);
    this.bytes = new Uint8Array(buffer);
  }
  u32(v: number): void {
    this.view.setUint32(this.at, v, true);
    this.at += 4;
  }
  f64(v: number): void {
    this.at = align8(this.at);
    this.view.setFloat64(this.at, v, true);
    this.at += 8;
  }
  tensor(t: HostTensor, placed?: Placed): void {
    const index = DTYPE_INDEX.get(t.dtype);
    if (index === undefined) throw new Error(`no wire code for dtype ${t.dtype}`);
    const kind = !placed ? 0 : "path" in placed ? IN_FILE : "rows" in placed ? ROWS : OUT_OF_LINE;
    this.u32(index | kind);
    this.u32(t.shape.length);
    for (const d of t.shape) this.f64(d);
    this.at = align8(this.at);
    // A joined input's bytes do not exist here, and an unaligned one's are not read as elements:
    // the length follows from the shape.
    this.u32(kind === ROWS || kind === OUT_OF_LINE ? elementCount(t.shape) * dtypeSize(t.dtype) : t.data.byteLength);
    this.u32(0);
    if (placed && "rows" in placed) {
      this.u32(placed.rows.length);
      this.u32(0);
      for (const r of placed.rows) {
        this.u32(r.part);
        this.u32(r.byteLength);
        this.f64(r.offset);
      }
      return;
    }
    if (placed && "path" in placed) {
      this.f64(placed.offset);
      this.raw(placed.path);
      return;
    }
    if (placed) {
      this.u32(placed.part);
      this.u32(0);
      this.f64(placed.offset);
      return;
    }
    const d = t.data;
    this.bytes.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), this.at);
    this.at = align8(this.at + d.byteLength);
  }
  raw(bytes: Uint8Array): void {
    this.u32(bytes.byteLength);
    this.bytes.set(bytes, this.at);
    this.at = align8(this.at + bytes.byteLength);
  }
}

/** Storage of `byteLength` bytes for a joined input, its contents undefined (every byte is written). */
export type TakeBuffer = (byteLength: number) => Uint8Array;

const freshBuffer: TakeBuffer = (byteLength) => new Uint8Array(byteLength);

export class Reader {
  readonly view: DataView;
  at = 0;
  /** Why an IN_FILE tensor could not be opened (its call fails; the rest of the batch goes on). */
  failure: unknown = undefined;
  constructor(
    readonly buffer: ArrayBuffer,
    private readonly openMapped?: OpenMapped,
    private readonly parts: readonly ArrayBuffer[] = [],
    private readonly takeBuffer: TakeBuffer = freshBuffer,
  ) {
    this.view = new DataView(buffer);
  }
  u32(): number {
    const v = this.view.getUint32(this.at, true);
    this.at += 4;
    return v;
  }
  f64(): number {
    this.at = align8(this.at);
    const v = this.view.getFloat64(this.at, true);
    this.at += 8;
    return v;
  }
  tensor(): HostTensor {
    const code = this.u32();
    const dtype = DTYPES[code & ~(IN_FILE | OUT_OF_LINE | ROWS)];
    if (dtype === undefined) throw new Error("engine wire: unknown dtype code");
    const rank = this.u32();
    const shape: number[] = [];
    for (let i = 0; i < rank; i++) shape.push(this.f64());
    this.at = align8(this.at);
    const byteLength = this.u32();
    this.u32();
    const elements = shape.reduce((a, b) => a * b, 1);
    if (code & ROWS) {
      const n = this.u32();
      this.u32();
      // One bulk copy per part; the rows past the parts are the padding, zeroed.
      const joined = this.takeBuffer(byteLength);
      let at = 0;
      for (let i = 0; i < n; i++) {
        const part = this.parts[this.u32()];
        const length = this.u32();
        const offset = this.f64();
        if (!part || offset + length > part.byteLength || at + length > byteLength) {
          throw new Error("engine wire: a row part past its part or its input");
        }
        joined.set(new Uint8Array(part, offset, length), at);
        at += length;
      }
      if (at < byteLength) joined.fill(0, at);
      return { dtype, shape, data: viewTyped(dtype, joined.buffer, 0, elements) };
    }
    if (code & OUT_OF_LINE) {
      const part = this.parts[this.u32()];
      this.u32();
      const offset = this.f64();
      if (!part || offset + byteLength > part.byteLength) throw new Error("engine wire: an input past its part");
      // A view where the bytes are aligned for the dtype; else a copy (a binary input after a JSON
      // header of any length), made here rather than on the HTTP thread, into a reused buffer.
      const bytes = new Uint8Array(part, offset, byteLength);
      if (offset % dtypeSize(dtype) === 0) return { dtype, shape, data: bytesAsTyped(dtype, bytes) };
      const aligned = this.takeBuffer(byteLength);
      aligned.set(bytes);
      return { dtype, shape, data: viewTyped(dtype, aligned.buffer, 0, elements) };
    }
    if (code & IN_FILE) {
      const offset = this.f64();
      const path = utf8Decoder.decode(this.raw());
      try {
        if (!this.openMapped) throw new Error("engine wire: a tensor in a mapped file where none can be opened");
        return { dtype, shape, data: bytesAsTyped(dtype, this.openMapped(path, offset, byteLength)) };
      } catch (error) {
        this.failure ??= error;
        return { dtype, shape, data: viewTyped(dtype, new ArrayBuffer(0), 0, 0) };
      }
    }
    const data = viewTyped(dtype, this.buffer, this.at, byteLength === 0 ? 0 : elements);
    this.at = align8(this.at + byteLength);
    return { dtype, shape, data };
  }
  raw(): Uint8Array {
    const n = this.u32();
    const out = new Uint8Array(this.buffer, this.at, n);
    this.at = align8(this.at + n);
    return out;
  }
}

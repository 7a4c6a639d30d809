import { type Pointer, ptr, toArrayBuffer } from "bun:ffi";
import type { ScalarKind } from "./ctypes.ts";
import type { StructDef } from "./struct-def.ts";

export type FieldValue = number | bigint | boolean;

/** Writes one scalar at `offset` of a DataView, by C kind. Pointers are JS numbers (48-bit). */
function writeScalar(view: DataView, offset: number, kind: ScalarKind, value: FieldValue): void {
  switch (kind) {
    case "u8":
      view.setUint8(offset, Number(value));
      return;
    case "bool":
      view.setUint8(offset, value ? 1 : 0);
      return;
    case "i32":
    case "enum":
      view.setInt32(offset, Number(value), true);
      return;
    case "u32":
      view.setUint32(offset, Number(value), true);
      return;
    case "f32":
      view.setFloat32(offset, Number(value), true);
      return;
    case "i64":
      view.setBigInt64(offset, BigInt(value), true);
      return;
    case "u64":
    case "size_t":
    case "ptr":
    case "fnptr":
      view.setBigUint64(offset, BigInt(value), true);
      return;
  }
}

function readScalar(view: DataView, offset: number, kind: ScalarKind): number | boolean {
  switch (kind) {
    case "u8":
      return view.getUint8(offset);
    case "bool":
      return view.getUint8(offset) !== 0;
    case "i32":
    case "enum":
      return view.getInt32(offset, true);
    case "u32":
      return view.getUint32(offset, true);
    case "f32":
      return view.getFloat32(offset, true);
    case "i64":
      return Number(view.getBigInt64(offset, true));
    case "u64":
    case "size_t":
    case "ptr":
    case "fnptr":
      return Number(view.getBigUint64(offset, true));
  }
}

/**
 * One instance of a C struct in memory this side owns. The storage is a Uint8Array over an
 * explicit ArrayBuffer: JavaScriptCore may move a small typed array's storage the first time its
 * `.buffer` is touched, which would leave C a stale pointer; one created over its own ArrayBuffer
 * never moves. Keep the CStruct referenced for as long as C may read or write it.
 */
export class CStruct {
  readonly def: StructDef;
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly address: Pointer;

  /** `at` places the struct inside a larger buffer this side owns (an array of structs). */
  constructor(def: StructDef, values: Record<string, FieldValue> = {}, at?: { buffer: ArrayBuffer; offset: number }) {
    this.def = def;
    const buffer = at?.buffer ?? new ArrayBuffer(def.size);
    const offset = at?.offset ?? 0;
    this.bytes = new Uint8Array(buffer, offset, def.size);
    this.view = new DataView(buffer, offset, def.size);
    this.address = ptr(this.bytes);
    if (def.hasStructSize) this.set("struct_size", def.structSize);
    for (const [k, v] of Object.entries(values)) this.set(k, v);
  }

  set(field: string, value: FieldValue): this {
    const f = this.def.field(field);
    if (f.type.kind !== "scalar") throw new TypeError(`${this.def.name}.${field} is not a scalar`);
    writeScalar(this.view, f.offset, f.type.scalar, value);
    return this;
  }

  /** Reads a scalar field; 64-bit values come back as numbers (exact below 2^53). */
  get(field: string): number {
    const f = this.def.field(field);
    if (f.type.kind !== "scalar") throw new TypeError(`${this.def.name}.${field} is not a scalar`);
    return Number(readScalar(this.view, f.offset, f.type.scalar));
  }

  getBool(field: string): boolean {
    return this.get(field) !== 0;
  }

  /** Writes one member of a union field (PJRT_NamedValue.value). */
  setUnion(field: string, member: string, value: FieldValue): this {
    const f = this.def.field(field);
    if (f.type.kind !== "union") throw new TypeError(`${this.def.name}.${field} is not a union`);
    const m = f.type.fields.find((x) => x.name === member);
    if (m?.type.kind !== "scalar") throw new TypeError(`${f.type.name} has no scalar member ${member}`);
    writeScalar(this.view, f.offset + m.offset, m.type.scalar, value);
    return this;
  }
}

/** A C array of `count` structs in one buffer this side owns; `address` is the first element. */
export function structArray(
  def: StructDef,
  count: number,
): { address: Pointer; items: CStruct[]; buffer: ArrayBuffer } {
  const buffer = new ArrayBuffer(Math.max(1, count) * def.size);
  const items = Array.from({ length: count }, (_, i) => new CStruct(def, {}, { buffer, offset: i * def.size }));
  return { address: ptr(new Uint8Array(buffer)), items, buffer };
}

/**
 * A read-only view of a struct that lives in plugin memory (an out-param array such as the
 * attributes of PJRT_Plugin_Attributes). Valid only while the plugin keeps that memory.
 */
export class NativeStruct {
  readonly def: StructDef;
  private readonly view: DataView;

  constructor(def: StructDef, address: number) {
    this.def = def;
    this.view = new DataView(toArrayBuffer(address as Pointer, 0, def.size));
  }

  get(field: string): number {
    const f = this.def.field(field);
    if (f.type.kind !== "scalar") throw new TypeError(`${this.def.name}.${field} is not a scalar`);
    return Number(readScalar(this.view, f.offset, f.type.scalar));
  }

  getUnion(field: string, member: string): number {
    const f = this.def.field(field);
    if (f.type.kind !== "union") throw new TypeError(`${this.def.name}.${field} is not a union`);
    const m = f.type.fields.find((x) => x.name === member);
    if (m?.type.kind !== "scalar") throw new TypeError(`${f.type.name} has no scalar member ${member}`);
    return Number(readScalar(this.view, f.offset + m.offset, m.type.scalar));
  }
}

/** A pointer array (`T* const*`) this side owns, over its own ArrayBuffer. */
export class PointerArray {
  readonly words: BigUint64Array;
  readonly address: Pointer;

  constructor(values: readonly number[] | number) {
    const length = typeof values === "number" ? values : values.length;
    // At least one slot so that ptr() never sees an empty buffer.
    this.words = new BigUint64Array(new ArrayBuffer(Math.max(1, length) * 8));
    if (typeof values !== "number")
      values.forEach((v, i) => {
        this.words[i] = BigInt(v);
      });
    this.address = ptr(this.words);
  }

  at(index: number): number {
    return Number(this.words[index] ?? 0n);
  }
}

/** Bytes copied into memory this side owns (code, options, dims), NUL-terminated for C strings. */
export function ownedBytes(source: Uint8Array | string, nulTerminate = false): { bytes: Uint8Array; address: Pointer } {
  const data = typeof source === "string" ? new TextEncoder().encode(source) : source;
  const bytes = new Uint8Array(new ArrayBuffer(Math.max(1, data.byteLength + (nulTerminate ? 1 : 0))));
  bytes.set(data);
  return { bytes, address: ptr(bytes) };
}

/** Reads `length` bytes of plugin memory as a UTF-8 string. */
export function readString(address: number, length: number): string {
  if (!address || length === 0) return "";
  return new TextDecoder().decode(new Uint8Array(toArrayBuffer(address as Pointer, 0, length)));
}

/** Copies `length` bytes of plugin memory into a new array this side owns. */
export function copyBytes(address: number, length: number): Uint8Array {
  const out = new Uint8Array(new ArrayBuffer(length));
  if (length > 0) out.set(new Uint8Array(toArrayBuffer(address as Pointer, 0, length)));
  return out;
}

/** Reads the i-th pointer of a native `T* const*` array. */
export function readPointerAt(address: number, index: number): number {
  return Number(new DataView(toArrayBuffer(address as Pointer, index * 8, 8)).getBigUint64(0, true));
}

/** Reads `count` int64 values of a native array. */
export function readInt64s(address: number, count: number): number[] {
  if (count === 0) return [];
  const view = new DataView(toArrayBuffer(address as Pointer, 0, count * 8));
  return Array.from({ length: count }, (_, i) => Number(view.getBigInt64(i * 8, true)));
}

const retained: { last: unknown } = { last: null };

/**
 * Keeps the given objects reachable up to this point: memory that C reads during a call (a
 * struct, code bytes, a dims array) must not be collected while the call runs, and a JIT may
 * otherwise treat a local as dead after its last use.
 */
export function keepAlive(...values: unknown[]): void {
  retained.last = values;
  retained.last = null;
}

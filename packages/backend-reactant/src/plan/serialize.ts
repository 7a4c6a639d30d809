import { XlaserveError } from "@xlaserve/core";
import { type ElemType, type NDArray, type TypedArray, allocData, elementCount } from "../array.ts";
import type { Attr, Func, Module, Op, ValueType } from "@xlaserve/stablehlo";

/**
 * The plan's byte form: the parsed module as compact JSON with every dense constant moved into a
 * binary section, so loading skips the text parse (hex decoding, tokenizing) and only rebuilds the
 * kernels. Layout: magic "XLRPLAN" + format byte, u32 JSON length, JSON, zero padding to 8, blobs.
 */

export const PLAN_FORMAT_VERSION = 1;
const MAGIC = "XLRPLAN";

interface BlobRef {
  readonly $nd: number;
  readonly t: ElemType;
  readonly s: number[];
}

function isNDArray(v: unknown): v is NDArray {
  return typeof v === "object" && v !== null && "data" in v && ArrayBuffer.isView((v as NDArray).data) && "type" in v;
}

/*
 * The JSON is positional (ops as arrays, types as [elem, shape]) and dense constants are blob
 * references, so loading is one JSON.parse plus a walk that rebuilds only what needs objects.
 */
type EncodedType = [string, number[]] | ["tuple", EncodedType[]] | ["token"];
type EncodedRegion = [[string, EncodedType][], EncodedOp[]];
type EncodedOp = [string, string[], string[], Record<string, unknown>, EncodedRegion[], EncodedType[]];
type EncodedFunc = [string, boolean, [string, EncodedType][], EncodedType[], EncodedOp[]];

function encodeType(t: ValueType): EncodedType {
  if (t.kind === "tensor") return [t.elem, t.shape];
  if (t.kind === "tuple") return ["tuple", t.items.map(encodeType)];
  return ["token"];
}

function decodeType(e: EncodedType): ValueType {
  if (e[0] === "token") return { kind: "token" };
  if (e[0] === "tuple") return { kind: "tuple", items: (e[1] as EncodedType[]).map(decodeType) };
  return { kind: "tensor", elem: e[0] as ElemType, shape: e[1] as number[] };
}

export function serializeModule(module: Module, meta: Record<string, unknown> = {}): Uint8Array {
  const blobs: TypedArray[] = [];
  const encodeAttr = (v: Attr): unknown => {
    if (isNDArray(v)) {
      blobs.push(v.data);
      return { $nd: blobs.length - 1, t: v.type, s: v.shape } satisfies BlobRef;
    }
    if (Array.isArray(v)) return v.map(encodeAttr);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encodeAttr(x)]));
    return v;
  };
  const encodeOp = (op: Op): EncodedOp => [
    op.name,
    op.results,
    op.operands,
    encodeAttr(op.attrs as Attr) as Record<string, unknown>,
    op.regions.map((r) => [r.args.map((a) => [a.name, encodeType(a.type)]), r.ops.map(encodeOp)]),
    op.resultTypes.map(encodeType),
  ];
  const funcs: EncodedFunc[] = module.funcs.map((f) => [
    f.name,
    f.isPublic,
    f.args.map((a) => [a.name, encodeType(a.type)]),
    f.resultTypes.map(encodeType),
    f.body.map(encodeOp),
  ]);
  const header = new TextEncoder().encode(JSON.stringify({ meta, name: module.name, funcs }));
  const headerEnd = align8(12 + header.length);
  const offsets: number[] = [];
  let size = headerEnd;
  for (const b of blobs) {
    offsets.push(size);
    size = align8(size + b.byteLength);
  }
  const out = new Uint8Array(size);
  for (let i = 0; i < MAGIC.length; i++) out[i] = MAGIC.charCodeAt(i);
  out[7] = PLAN_FORMAT_VERSION;
  new DataView(out.buffer).setUint32(8, header.length, true);
  out.set(header, 12);
  blobs.forEach((b, i) => {
    out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), offsets[i] as number);
  });
  return out;
}

export function deserializeModule(bytes: Uint8Array): { module: Module; meta: Record<string, unknown> } {
  const magic = String.fromCharCode(...bytes.subarray(0, MAGIC.length));
  if (magic !== MAGIC) throw new XlaserveError("CACHE_CORRUPT", "not a reactant plan (bad magic)");
  if (bytes[7] !== PLAN_FORMAT_VERSION) {
    throw new XlaserveError("CACHE_CORRUPT", `plan format ${bytes[7]} is not ${PLAN_FORMAT_VERSION}`);
  }
  if (bytes.length < 12) throw new XlaserveError("CACHE_CORRUPT", "plan header is truncated");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > bytes.length) throw new XlaserveError("CACHE_CORRUPT", "plan header is truncated");
  // One aligned copy of the blob section; constants are views into it.
  const blobStart = align8(12 + headerLength);
  const blobCopy = new Uint8Array(Math.max(0, bytes.length - blobStart));
  blobCopy.set(bytes.subarray(blobStart));
  let cursor = 0;
  const decodeBlob = (ref: BlobRef): NDArray => {
    const probe = allocData(ref.t, 0);
    const slots = ref.t === "c64" || ref.t === "c128" ? 2 : 1;
    const length = elementCount(ref.s) * slots;
    const byteLength = length * (probe as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
    if (cursor + byteLength > blobCopy.length) throw new XlaserveError("CACHE_CORRUPT", "plan constants are truncated");
    const Ctor = probe.constructor as new (b: ArrayBufferLike, o: number, l: number) => TypedArray;
    const data = new Ctor(blobCopy.buffer, cursor, length);
    cursor = align8(cursor + byteLength);
    return { type: ref.t, shape: ref.s, data };
  };
  const decodeAttr = (v: unknown): Attr => {
    if (Array.isArray(v)) return v.map(decodeAttr);
    if (v && typeof v === "object") {
      if ("$nd" in v) return decodeBlob(v as BlobRef);
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decodeAttr(x)]));
    }
    return v as Attr;
  };
  const decodeOp = (e: EncodedOp): Op => ({
    name: e[0],
    results: e[1],
    operands: e[2],
    attrs: decodeAttr(e[3]) as Record<string, Attr>,
    regions: e[4].map(([args, ops]) => ({
      args: args.map(([name, t]) => ({ name, type: decodeType(t) })),
      ops: ops.map(decodeOp),
    })),
    resultTypes: e[5].map(decodeType),
    operandTypes: null,
    offset: 0,
  });
  let parsed: { meta?: Record<string, unknown>; name: string | null; funcs: EncodedFunc[] };
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)));
  } catch (e) {
    throw new XlaserveError("CACHE_CORRUPT", `plan header is not valid JSON: ${(e as Error).message}`);
  }
  const funcs: Func[] = parsed.funcs.map(([name, isPublic, args, results, body]) => ({
    name,
    isPublic,
    args: args.map(([n, t]) => ({ name: n, type: decodeType(t) })),
    resultTypes: results.map(decodeType),
    body: body.map(decodeOp),
  }));
  return { module: { name: parsed.name, funcs }, meta: parsed.meta ?? {} };
}

function align8(n: number): number {
  return (n + 7) & ~7;
}

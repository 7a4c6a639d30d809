import type { AttrTypeTable } from "./attr-types.ts";
import { dims, readBlob, readList, readSignedList } from "./attr-types.ts";
import type { ByteReader } from "./byte-reader.ts";
import { integerWidth, readFloatAttr, readIntegerAttr } from "./numbers.ts";
import type { RawAttr, RawType } from "./values.ts";
import { checkDenseSize } from "./vhlo-encoding.ts";

/** The builtin dialect's attribute codes (BuiltinDialectBytecode.td; the order is the format). */
const ATTR = {
  array: 0,
  dictionary: 1,
  string: 2,
  stringWithType: 3,
  flatSymbolRef: 4,
  symbolRef: 5,
  type: 6,
  unit: 7,
  integer: 8,
  float: 9,
  callSiteLoc: 10,
  fileLineColLoc: 11,
  fusedLoc: 12,
  fusedLocWithMetadata: 13,
  nameLoc: 14,
  unknownLoc: 15,
  denseResourceElements: 16,
  denseArray: 17,
  denseIntOrFPElements: 18,
  denseStringElements: 19,
  sparseElements: 20,
  distinct: 21,
  fileLineColRange: 22,
} as const;

export function readBuiltinAttr(r: ByteReader, t: AttrTypeTable): RawAttr {
  const at = r.pos;
  const code = r.varint("a builtin attribute code");
  switch (code) {
    case ATTR.array:
      return { k: "array", items: readList(r, "an array attribute", () => t.attr(r)) };
    case ATTR.dictionary:
      return readDictionary(r, t, "a dictionary attribute");
    case ATTR.string:
      return { k: "string", value: readString(r, t) };
    case ATTR.stringWithType: {
      const value = readString(r, t);
      t.type(r);
      return { k: "string", value };
    }
    case ATTR.flatSymbolRef:
      return { k: "symbol", root: stringOf(t.attr(r), r), nested: [] };
    case ATTR.symbolRef: {
      const root = stringOf(t.attr(r), r);
      const nested = readList(r, "nested symbol references", () => {
        const ref = t.attr(r);
        return ref.k === "symbol" ? ref.root : "";
      });
      return { k: "symbol", root, nested };
    }
    case ATTR.type:
      return { k: "type", type: t.type(r) };
    case ATTR.unit:
      return { k: "unit" };
    case ATTR.integer:
      return readIntegerAttr(r, t, integerWidth, "an integer attribute");
    case ATTR.float:
      return readFloatAttr(r, t, "a float attribute");
    case ATTR.callSiteLoc:
      t.attr(r);
      t.attr(r);
      return { k: "loc" };
    case ATTR.fileLineColLoc:
      t.attr(r);
      r.varint("a line");
      r.varint("a column");
      return { k: "loc" };
    case ATTR.fusedLoc:
      readList(r, "fused locations", () => t.attr(r));
      return { k: "loc" };
    case ATTR.fusedLocWithMetadata:
      readList(r, "fused locations", () => t.attr(r));
      t.attr(r);
      return { k: "loc" };
    case ATTR.nameLoc:
      t.attr(r);
      t.attr(r);
      return { k: "loc" };
    case ATTR.unknownLoc:
      return { k: "loc" };
    case ATTR.denseArray: {
      const elem = t.type(r);
      const size = r.varint("a dense array's size");
      return { k: "dense_array", elem, size, data: readBlob(r, "a dense array's data") };
    }
    case ATTR.denseIntOrFPElements: {
      const type = t.type(r);
      const dataAt = r.pos;
      const data = readBlob(r, "dense elements");
      checkDenseSize(r, type, data.length, dataAt);
      return { k: "dense", type, data };
    }
    case ATTR.distinct:
      return t.attr(r);
    case ATTR.fileLineColRange:
      t.attr(r);
      readList(r, "a location range", () => r.varint("a line or column"));
      return { k: "loc" };
    case ATTR.denseResourceElements:
    case ATTR.denseStringElements:
    case ATTR.sparseElements:
      throw r.fail("dense integer or float elements (resource, string and sparse elements are not supported)", at);
    default:
      throw r.fail(`a builtin attribute code up to ${ATTR.fileLineColRange}, found ${code}`, at);
  }
}

function readString(r: ByteReader, t: AttrTypeTable): string {
  const at = r.pos;
  const index = r.varint("a string index");
  const s = t.container.strings.at(index);
  if (s === undefined) throw r.fail(`a string index below ${t.container.strings.length}, found ${index}`, at);
  return s;
}

/** `count, (name, value)...`: names are string attributes (builtin and dictionary_v1 alike). */
export function readDictionary(r: ByteReader, t: AttrTypeTable, what: string): RawAttr {
  return { k: "dict", entries: readList(r, what, () => [stringOf(t.attr(r), r), t.attr(r)] as [string, RawAttr]) };
}

export function stringOf(a: RawAttr, r: ByteReader): string {
  if (a.k !== "string") throw r.fail(`a string attribute, found a ${a.k} attribute`);
  return a.value;
}

/** The builtin dialect's type codes. */
const TYPE = {
  integer: 0,
  index: 1,
  function: 2,
  bf16: 3,
  f16: 4,
  f32: 5,
  f64: 6,
  f80: 7,
  f128: 8,
  complex: 9,
  memref: 10,
  memrefWithSpace: 11,
  none: 12,
  rankedTensor: 13,
  rankedTensorWithEncoding: 14,
  tuple: 15,
  unrankedMemref: 16,
  unrankedMemrefWithSpace: 17,
  unrankedTensor: 18,
  vector: 19,
  vectorScalable: 20,
} as const;

export function readBuiltinType(r: ByteReader, t: AttrTypeTable): RawType {
  const at = r.pos;
  const code = r.varint("a builtin type code");
  switch (code) {
    case TYPE.integer: {
      const v = r.varint("an integer type's width and signedness");
      const width = Math.floor(v / 4);
      const signedness = v % 4; // 0 signless, 1 signed, 2 unsigned
      if (width === 1 && signedness === 0) return { k: "bool" };
      return { k: "int", width, signed: signedness === 1, signless: signedness === 0 };
    }
    case TYPE.index:
      return { k: "index" };
    case TYPE.function:
      return readFunctionType(r, t);
    case TYPE.bf16:
      return { k: "float", name: "bf16", bits: 16 };
    case TYPE.f16:
      return { k: "float", name: "f16", bits: 16 };
    case TYPE.f32:
      return { k: "float", name: "f32", bits: 32 };
    case TYPE.f64:
      return { k: "float", name: "f64", bits: 64 };
    case TYPE.f80:
      return { k: "float", name: "f80", bits: 80 };
    case TYPE.f128:
      return { k: "float", name: "f128", bits: 128 };
    case TYPE.complex:
      return { k: "complex", elem: t.type(r) };
    case TYPE.none:
      return { k: "none" };
    case TYPE.rankedTensor:
      return readRankedTensor(r, t, false);
    case TYPE.rankedTensorWithEncoding:
      return readRankedTensor(r, t, true);
    case TYPE.tuple:
      return readTupleType(r, t);
    case TYPE.unrankedTensor:
      return { k: "unranked", elem: t.type(r) };
    case TYPE.memref:
    case TYPE.memrefWithSpace:
    case TYPE.unrankedMemref:
    case TYPE.unrankedMemrefWithSpace:
    case TYPE.vector:
    case TYPE.vectorScalable:
      throw r.fail("a tensor, tuple, function, integer or float type (memref and vector types are not StableHLO)", at);
    default:
      throw r.fail(`a builtin type code up to ${TYPE.vectorScalable}, found ${code}`, at);
  }
}

/** `inputs: Type[], results: Type[]` (builtin function and VHLO func_v1 alike). */
export function readFunctionType(r: ByteReader, t: AttrTypeTable): RawType {
  const inputs = readList(r, "function inputs", () => t.type(r));
  return { k: "function", inputs, results: readList(r, "function results", () => t.type(r)) };
}

/** `[encoding: Attribute,] shape: svarint[], element: Type` (builtin and tensor_v1 alike). */
export function readRankedTensor(r: ByteReader, t: AttrTypeTable, withEncoding: boolean): RawType {
  const encoding = withEncoding ? t.attr(r) : null;
  const shape = dims(readSignedList(r, "a tensor shape"));
  return { k: "tensor", shape, elem: t.type(r), encoding };
}

export function readTupleType(r: ByteReader, t: AttrTypeTable): RawType {
  return { k: "tuple", items: readList(r, "tuple elements", () => t.type(r)) };
}

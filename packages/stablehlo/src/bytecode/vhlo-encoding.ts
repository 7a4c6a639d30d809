import type { AttrTypeTable } from "./attr-types.ts";
import { dims, readBlob, readList, readSignedList } from "./attr-types.ts";
import { readDictionary, readFunctionType, readRankedTensor, readTupleType } from "./builtin.ts";
import type { ByteReader } from "./byte-reader.ts";
import { floatValue, readAPInt, readFloatAttr, readIntegerAttr } from "./numbers.ts";
import { elementCount, storageBytes } from "../elements.ts";
import { elemOf, typeText } from "../vhlo/types.ts";
import type { RawAttr, RawType } from "./values.ts";

/**
 * The VHLO dialect's attribute and type encodings (VhloBytecode.cpp). The codes are part of the
 * portable format and never change; a code this table lacks is an artifact from a newer
 * StableHLO than this reader knows.
 */

/** Attribute codes whose payload is one varint: the case number of an enum. */
const ENUM_ATTRS: Record<number, string> = {
  3: "comparison_direction",
  4: "comparison_type",
  5: "custom_call_api_version",
  7: "fft_type",
  11: "precision",
  12: "rng_algorithm",
  13: "rng_distribution",
  16: "transpose",
  19: "result_accuracy_mode",
};

/** How many cases each enum has (VhloEnums.td); a larger number is a corrupt or newer file. */
const ENUM_CASES: Record<string, number> = {
  comparison_direction: 6,
  comparison_type: 5,
  custom_call_api_version: 5,
  fft_type: 4,
  precision: 3,
  rng_algorithm: 3,
  rng_distribution: 3,
  transpose: 4,
  result_accuracy_mode: 3,
};

const ATTR = {
  array: 1,
  boolean: 2,
  dictionary: 6,
  float: 8,
  integer: 9,
  outputOperandAlias: 10,
  string: 14,
  tensor: 15,
  type: 17,
  typeExtensions: 18,
  resultAccuracy: 20,
  subAxisInfo: 21,
  axisRef: 22,
  replicaGroupMeshAxes: 23,
} as const;

export const VHLO_ATTR_CODES = 23;

export function readVhloAttr(r: ByteReader, t: AttrTypeTable): RawAttr {
  const at = r.pos;
  const code = r.varint("a vhlo attribute code");
  const enumName = ENUM_ATTRS[code];
  if (enumName) {
    const valueAt = r.pos;
    const value = r.varint(`a ${enumName} value`);
    const cases = ENUM_CASES[enumName] as number;
    if (value >= cases) throw r.fail(`a ${enumName} case below ${cases}, found ${value}`, valueAt);
    return { k: "enum", enum: enumName, value };
  }
  switch (code) {
    case ATTR.array:
      return { k: "array", items: readList(r, "an array_v1 attribute", () => t.attr(r)) };
    case ATTR.boolean: {
      const v = r.varint("a boolean_v1 value");
      if (v > 1) throw r.fail(`a boolean 0 or 1, found ${v}`, at);
      return { k: "bool", value: v === 1 };
    }
    case ATTR.dictionary:
      return readDictionary(r, t, "a dictionary_v1 attribute");
    case ATTR.float:
      return readFloatAttr(r, t, "a float_v1 attribute");
    case ATTR.integer:
      return readIntegerAttr(r, t, integerV1Width, "an integer_v1 attribute");
    case ATTR.outputOperandAlias: {
      const outputTupleIndices = readSignedList(r, "output tuple indices");
      const operandIndex = r.svarint("an operand index");
      const operandTupleIndices = readSignedList(r, "operand tuple indices");
      return {
        k: "struct",
        name: "output_operand_alias",
        fields: {
          output_tuple_indices: outputTupleIndices,
          operand_index: operandIndex,
          operand_tuple_indices: operandTupleIndices,
        },
      };
    }
    case ATTR.string:
      return { k: "string", value: readStringIndex(r, t) };
    case ATTR.tensor: {
      const type = t.type(r);
      const dataAt = r.pos;
      const data = unpackBooleans(type, readBlob(r, "a tensor_v1's data"));
      checkDenseSize(r, type, data.length, dataAt);
      return { k: "dense", type, data };
    }
    case ATTR.type:
      return { k: "type", type: t.type(r) };
    case ATTR.typeExtensions:
      return { k: "struct", name: "type_extensions", fields: { bounds: dims(readSignedList(r, "type bounds")) } };
    case ATTR.resultAccuracy: {
      const f64: RawType = { k: "float", name: "f64", bits: 64 };
      const atol = floatValue(readAPInt(r, 64, "atol"), f64);
      const rtol = floatValue(readAPInt(r, 64, "rtol"), f64);
      const ulps = r.svarint("ulps");
      const mode = t.attr(r);
      return { k: "struct", name: "result_accuracy", fields: { atol, rtol, ulps, mode } };
    }
    case ATTR.subAxisInfo: {
      const preSize = r.svarint("a sub-axis pre-size");
      const size = r.svarint("a sub-axis size");
      return { k: "struct", name: "sub_axis_info", fields: { pre_size: preSize, size } };
    }
    case ATTR.axisRef: {
      const name = t.attr(r);
      const sub = readList(r, "an axis reference's sub-axis", () => t.attr(r));
      const fields: Record<string, RawAttr> = { name };
      if (sub[0]) fields.sub_axis_info = sub[0];
      return { k: "struct", name: "axis_ref", fields };
    }
    case ATTR.replicaGroupMeshAxes: {
      const mesh = t.attr(r);
      const axes = t.attr(r);
      const meshRef: RawAttr = mesh.k === "string" ? { k: "symbol", root: mesh.value, nested: [] } : mesh;
      return { k: "struct", name: "replica_group_mesh_axes", fields: { mesh: meshRef, axes } };
    }
    default:
      throw r.fail(
        `a vhlo attribute code this reader knows (1 to ${VHLO_ATTR_CODES}), found ${code}: the artifact is newer than the reader`,
        at,
      );
  }
}

/** integer_v1 values are 4 to 64 bits wide; index is 64. */
function integerV1Width(type: RawType): number | null {
  return type.k === "index" ? 64 : type.k === "int" && type.width >= 4 ? type.width : null;
}

function readStringIndex(r: ByteReader, t: AttrTypeTable): string {
  const at = r.pos;
  const index = r.varint("a string index");
  const s = t.container.strings.at(index);
  if (s === undefined) throw r.fail(`a string index below ${t.container.strings.length}, found ${index}`, at);
  return s;
}

/** i1 tensors are written packed, 8 elements a byte (a splat as one 0x00 / 0xFF byte). */
function unpackBooleans(type: RawType, blob: Uint8Array): Uint8Array {
  if (type.k !== "tensor" || type.elem.k !== "bool") return blob;
  let n = 1;
  for (const d of type.shape) n *= Math.max(d, 0);
  const packed = Math.ceil(n / 8);
  if (blob.length !== packed || blob.length === n) return blob;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = ((blob[i >> 3] as number) >> (i & 7)) & 1;
  return out;
}

const SIMPLE_TYPES: Record<number, RawType> = {
  0: { k: "bool" },
  2: { k: "float", name: "bf16", bits: 16 },
  3: { k: "float", name: "f16", bits: 16 },
  4: { k: "float", name: "f32", bits: 32 },
  5: { k: "float", name: "f64", bits: 64 },
  6: { k: "float", name: "f8E4M3FN", bits: 8 },
  7: { k: "float", name: "f8E5M2", bits: 8 },
  9: { k: "index" },
  10: { k: "int", width: 4, signed: false, signless: true },
  11: { k: "int", width: 8, signed: false, signless: true },
  12: { k: "int", width: 16, signed: false, signless: true },
  13: { k: "int", width: 32, signed: false, signless: true },
  14: { k: "int", width: 64, signed: false, signless: true },
  15: { k: "int", width: 4, signed: false, signless: false },
  16: { k: "int", width: 8, signed: false, signless: false },
  17: { k: "int", width: 16, signed: false, signless: false },
  18: { k: "int", width: 32, signed: false, signless: false },
  19: { k: "int", width: 64, signed: false, signless: false },
  22: { k: "token" },
  26: { k: "witness" },
  27: { k: "float", name: "f8E4M3FNUZ", bits: 8 },
  28: { k: "float", name: "f8E5M2FNUZ", bits: 8 },
  29: { k: "float", name: "f8E4M3B11FNUZ", bits: 8 },
  31: { k: "int", width: 2, signed: false, signless: true },
  32: { k: "int", width: 2, signed: false, signless: false },
  33: { k: "none" },
  34: { k: "float", name: "tf32", bits: 19 },
  35: { k: "float", name: "f8E4M3", bits: 8 },
  36: { k: "float", name: "f8E3M4", bits: 8 },
  37: { k: "float", name: "f4E2M1FN", bits: 4 },
  38: { k: "float", name: "f6E2M3FN", bits: 6 },
  39: { k: "float", name: "f6E3M2FN", bits: 6 },
  40: { k: "float", name: "f8E8M0FNU", bits: 8 },
};

const TYPE = {
  complex: 1,
  function: 8,
  rankedTensor: 20,
  rankedTensorWithEncoding: 21,
  tuple: 23,
  uniformQuantized: 24,
  unrankedTensor: 25,
  uniformQuantizedPerAxis: 30,
  rankedBuffer: 41,
  future: 42,
} as const;

export const VHLO_TYPE_CODES = 42;

export function readVhloType(r: ByteReader, t: AttrTypeTable): RawType {
  const at = r.pos;
  const code = r.varint("a vhlo type code");
  const simple = SIMPLE_TYPES[code];
  if (simple) return simple;
  switch (code) {
    case TYPE.complex:
      return { k: "complex", elem: t.type(r) };
    case TYPE.function:
      return readFunctionType(r, t);
    case TYPE.rankedTensor:
      return readRankedTensor(r, t, false);
    case TYPE.rankedTensorWithEncoding:
      return readRankedTensor(r, t, true);
    case TYPE.tuple:
      return readTupleType(r, t);
    case TYPE.unrankedTensor:
      return { k: "unranked", elem: t.type(r) };
    case TYPE.rankedBuffer: {
      const shape = dims(readSignedList(r, "a buffer shape"));
      return { k: "buffer", shape, elem: t.type(r) };
    }
    case TYPE.future:
      return { k: "future", items: readList(r, "the types of a future", () => t.type(r)) };
    case TYPE.uniformQuantized:
      return readQuantized(r, t, false);
    case TYPE.uniformQuantizedPerAxis:
      return readQuantized(r, t, true);
    default:
      throw r.fail(
        `a vhlo type code this reader knows (0 to ${VHLO_TYPE_CODES}), found ${code}: the artifact is newer than the reader`,
        at,
      );
  }
}

/** `!quant.uniform<...>` kept as its canonical text: the model holds quantized types opaquely. */
function readQuantized(r: ByteReader, t: AttrTypeTable, perAxis: boolean): RawType {
  const f64: RawType = { k: "float", name: "f64", bits: 64 };
  const flags = r.varint("quantized type flags");
  const storage = t.type(r);
  const expressed = t.type(r);
  const scale = () => floatValue(readAPInt(r, 64, "a scale"), f64);
  if (!perAxis) {
    const s = scale();
    const zero = r.svarint("a zero point");
    const min = r.svarint("a storage minimum");
    const max = r.svarint("a storage maximum");
    return { k: "quant", text: quantText(flags, storage, expressed, min, max, null, [[s, zero]]) };
  }
  const axis = r.varint("a quantized dimension");
  const min = r.svarint("a storage minimum");
  const max = r.svarint("a storage maximum");
  const scales = readList(r, "scales", scale);
  const zeros = readList(r, "zero points", () => r.svarint("a zero point"));
  return {
    k: "quant",
    text: quantText(
      flags,
      storage,
      expressed,
      min,
      max,
      axis,
      scales.map((s, i) => [s, zeros[i] ?? 0]),
    ),
  };
}

function quantText(
  flags: number,
  storage: RawType,
  expressed: RawType,
  min: number,
  max: number,
  axis: number | null,
  params: [number, number][],
): string {
  const signed = (flags & 1) === 1;
  const width = storage.k === "int" ? storage.width : 0;
  const fullMin = signed ? -(2 ** (width - 1)) : 0;
  const fullMax = signed ? 2 ** (width - 1) - 1 : 2 ** width - 1;
  const range = min === fullMin && max === fullMax ? "" : `<${min}:${max}>`;
  const st = `${signed ? "i" : "u"}${width}${range}`;
  const ex = expressed.k === "float" ? expressed.name : "?";
  const p = params.map(([s, z]) => (z === 0 ? `${s}` : `${s}:${z}`)).join(", ");
  return axis === null ? `!quant.uniform<${st}:${ex}, ${p}>` : `!quant.uniform<${st}:${ex}:${axis}, {${p}}>`;
}

/** Dense data holds every element, or one (a splat); anything else is a corrupt artifact. */
export function checkDenseSize(r: ByteReader, type: RawType, length: number, at: number): void {
  if (type.k !== "tensor" || type.shape.some((d) => d < 0)) return;
  const elem = elemOf(type.elem);
  if (!elem) return;
  const size = storageBytes(elem);
  const count = elementCount(type.shape);
  if (length !== size * count && length !== size) {
    throw r.fail(
      `${size * count} bytes of dense data for a ${typeText(type)} (or ${size} for a splat), found ${length}`,
      at,
    );
  }
}

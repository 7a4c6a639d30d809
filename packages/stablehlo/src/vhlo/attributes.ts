import type { RawAttr } from "../bytecode/values.ts";
import { alloc, elementCount, isSubByte, storageBytes, wrapSubByte } from "../elements.ts";
import { ModuleError } from "../errors.ts";
import type { Attr, AttrObject } from "../ir.ts";
import { elemOf, typeText } from "./types.ts";

/** Case names of VHLO's enums by case number (VhloEnums.td). */
const ENUMS: Record<string, readonly string[]> = {
  comparison_direction: ["EQ", "NE", "GE", "GT", "LE", "LT"],
  comparison_type: ["NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"],
  fft_type: ["FFT", "IFFT", "RFFT", "IRFFT"],
  precision: ["DEFAULT", "HIGH", "HIGHEST"],
  rng_algorithm: ["DEFAULT", "THREE_FRY", "PHILOX"],
  rng_distribution: ["", "UNIFORM", "NORMAL"],
  transpose: ["TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"],
  result_accuracy_mode: ["DEFAULT", "HIGHEST", "TOLERANCE"],
};

/**
 * A VHLO attribute as the text parser would hold its StableHLO form (ir.ts): numbers,
 * booleans, strings, enums by name, lists, dictionaries, dense tensors as NDArrays, symbol
 * references as `{ symbol }`, structured attributes as objects of their fields.
 */
export function toAttr(a: RawAttr, origin: string): Attr {
  switch (a.k) {
    case "array":
      return a.items.map((i) => toAttr(i, origin));
    case "dict": {
      const out: Record<string, Attr> = {};
      for (const [k, v] of a.entries) out[k] = toAttr(v, origin);
      return out;
    }
    case "string":
      return a.value;
    case "symbol":
      return { symbol: a.root };
    case "type":
      return typeText(a.type);
    case "unit":
      return true;
    case "bool":
      return a.value;
    case "int":
      return Number(a.value);
    case "float":
      return a.type.k === "float" && a.type.bits < 64 ? shortestNarrow(a.value, a.type.name) : a.value;
    case "enum": {
      // The custom-call API version prints as its number (`api_version = 2 : i32`).
      if (a.enum === "custom_call_api_version") return a.value;
      const name = ENUMS[a.enum]?.[a.value];
      if (!name) throw new ModuleError("MODULE_INVALID", `${origin}: ${a.enum} has no case ${a.value}`, { origin });
      return name;
    }
    case "dense":
      return toDense(a, origin);
    case "dense_array":
      return denseArrayValues(a);
    case "struct": {
      const out: Record<string, Attr> = {};
      for (const [k, v] of Object.entries(a.fields))
        out[k] = typeof v === "object" && !Array.isArray(v) ? toAttr(v, origin) : v;
      return out as AttrObject;
    }
    case "loc":
      return "loc";
    case "opaque":
      return a.text;
  }
}

function toDense(a: Extract<RawAttr, { k: "dense" }>, origin: string): Attr {
  const t = a.type;
  const elem = t.k === "tensor" ? elemOf(t.elem) : null;
  if (t.k !== "tensor" || !elem || t.shape.some((d) => d < 0)) {
    return { type: typeText(t), hex: hex(a.data) };
  }
  const size = storageBytes(elem);
  const count = elementCount(t.shape);
  if (a.data.length !== size * count && (a.data.length !== size || size * count > MAX_SPLAT_BYTES)) {
    throw new ModuleError(
      "MODULE_INVALID",
      `${origin}: a dense ${typeText(t)} needs ${size * count} bytes of data (or ${size} for a splat of at most ${MAX_SPLAT_BYTES} bytes), found ${a.data.length}`,
      { origin, expected: `${size * count} bytes of dense data` },
    );
  }
  const out = alloc(elem, t.shape);
  const target = new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength);
  if (a.data.length === size * count) target.set(a.data);
  else for (let i = 0; i < count; i++) target.set(a.data, i * size);
  if (isSubByte(elem) || elem === "i1") {
    const d = out.data as Int8Array;
    for (let i = 0; i < d.length; i++) d[i] = wrapSubByte(elem, d[i] as number);
  }
  return out;
}

/** A splat constant is expanded in memory; beyond this it is a corrupt shape, not a model. */
const MAX_SPLAT_BYTES = 1 << 28;

function hex(bytes: Uint8Array): string {
  let s = "0x";
  for (const b of bytes) s += b.toString(16).padStart(2, "0").toUpperCase();
  return s;
}

function denseArrayValues(a: Extract<RawAttr, { k: "dense_array" }>): Attr {
  const out: Attr[] = [];
  const view = new DataView(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const width =
    a.elem.k === "bool" ? 1 : a.elem.k === "int" ? a.elem.width / 8 : a.elem.k === "float" ? a.elem.bits / 8 : 0;
  for (let i = 0; i < a.size && (i + 1) * width <= a.data.length; i++) {
    if (a.elem.k === "bool") out.push(a.data[i] !== 0);
    else if (a.elem.k === "float") out.push(width === 8 ? view.getFloat64(i * 8, true) : view.getFloat32(i * 4, true));
    else if (width === 8) out.push(Number(view.getBigInt64(i * 8, true)));
    else if (width === 4) out.push(view.getInt32(i * 4, true));
    else if (width === 2) out.push(view.getInt16(i * 2, true));
    else out.push(view.getInt8(i));
  }
  return out;
}

/** The integers of a 1-D integer tensor attribute (dimension lists), or null. */
export function intList(a: RawAttr | undefined): number[] | null {
  if (a?.k !== "dense" || a.type.k !== "tensor") return null;
  const elem = a.type.elem;
  if (elem.k !== "int") return null;
  const width = elem.width / 8;
  const n = elementCount(a.type.shape.map((d) => Math.max(d, 0)));
  const view = new DataView(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const splat = a.data.length === width && n > 1;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const at = splat ? 0 : i * width;
    if (at + width > a.data.length) return null;
    out.push(
      width === 8 ? Number(view.getBigInt64(at, true)) : width === 4 ? view.getInt32(at, true) : view.getInt8(at),
    );
  }
  return out;
}

export function boolList(a: RawAttr | undefined): boolean[] | null {
  if (a?.k !== "dense" || a.type.k !== "tensor") return null;
  const n = elementCount(a.type.shape.map((d) => Math.max(d, 0)));
  const splat = a.data.length === 1 && n > 1;
  return Array.from({ length: n }, (_, i) => (a.data[splat ? 0 : i] ?? 0) !== 0);
}

/**
 * A narrow float attribute's value as its shortest decimal (`1.000000e-03 : f32` reads as 0.001,
 * not as the f32's exact 0.0010000000474974513), so text and bytecode give the same number.
 */
function shortestNarrow(value: number, name: string): number {
  if (!Number.isFinite(value) || name !== "f32") return value;
  const target = Math.fround(value);
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === target) return candidate;
  }
  return value;
}

import type { RawAttr, RawType } from "../bytecode/values.ts";
import { ELEM_TYPES, type ElemType } from "../elements.ts";
import { ModuleError } from "../errors.ts";
import type { ValueType } from "../ir.ts";
import { canonicalTypeText } from "../type-text.ts";

const ELEMS = new Set<string>(ELEM_TYPES);

/** The model's element type for a VHLO / builtin element type, or null (index, f4, quant...). */
export function elemOf(t: RawType): ElemType | null {
  let name: string | null = null;
  if (t.k === "bool") name = "i1";
  else if (t.k === "int") name = `${t.signless || t.signed ? "i" : "ui"}${t.width}`;
  else if (t.k === "float") name = t.name;
  else if (t.k === "complex" && t.elem.k === "float")
    name = t.elem.name === "f32" ? "c64" : t.elem.name === "f64" ? "c128" : null;
  return name !== null && ELEMS.has(name) ? (name as ElemType) : null;
}

/**
 * Types the model holds as tensors / tuples / tokens; any other (dynamic or bounded shapes,
 * quantized or index elements, futures, buffers) is `other` with its StableHLO spelling, or,
 * for the engine (`strict`), UNSUPPORTED as the text parser reports it.
 */
export function toValueType(t: RawType, strict: boolean): ValueType {
  if (t.k === "token") return { kind: "token" };
  if (t.k === "tuple") return { kind: "tuple", items: t.items.map((i) => toValueType(i, strict)) };
  if (t.k === "tensor" && t.encoding === null && t.shape.every((d) => d >= 0)) {
    const elem = elemOf(t.elem);
    if (elem && (!strict || !elem.startsWith("f8"))) return { kind: "tensor", elem, shape: [...t.shape] };
  }
  if (strict) throw unsupported(t);
  return { kind: "other", text: canonicalTypeText(typeText(t)) };
}

function unsupported(t: RawType): ModuleError {
  const text = typeText(t);
  if (t.k === "tensor" && t.shape.some((d) => d < 0)) {
    return new ModuleError("UNSUPPORTED", "dynamic tensor dimensions (?) are not supported", { type: text });
  }
  if (t.k === "tensor" && t.elem.k === "quant") {
    return new ModuleError("UNSUPPORTED", `quantized element type ${typeText(t.elem)} is not supported`, {
      type: text,
    });
  }
  if (t.k === "tensor" && t.elem.k === "float" && t.elem.name.startsWith("f8")) {
    return new ModuleError("UNSUPPORTED", `element type ${t.elem.name} (8-bit float) is not supported`, { type: text });
  }
  return new ModuleError("UNSUPPORTED", `type ${text} is not supported`, { type: text });
}

/** StableHLO's spelling of a type, as the text form prints it. */
export function typeText(t: RawType): string {
  switch (t.k) {
    case "bool":
      return "i1";
    case "int":
      return `${t.signless ? "i" : t.signed ? "si" : "ui"}${t.width}`;
    case "index":
      return "index";
    case "float":
      return t.name;
    case "complex":
      return `complex<${typeText(t.elem)}>`;
    case "tensor": {
      const dims = [...t.shape.map((d) => (d < 0 ? "?" : String(d))), typeText(t.elem)].join("x");
      return t.encoding ? `tensor<${dims}, ${encodingText(t.encoding)}>` : `tensor<${dims}>`;
    }
    case "unranked":
      return `tensor<*x${typeText(t.elem)}>`;
    case "buffer":
      return `memref<${[...t.shape.map((d) => (d < 0 ? "?" : String(d))), typeText(t.elem)].join("x")}>`;
    case "tuple":
      return `tuple<${t.items.map(typeText).join(", ")}>`;
    case "function":
      return `(${t.inputs.map(typeText).join(", ")}) -> (${t.results.map(typeText).join(", ")})`;
    case "token":
      return "!stablehlo.token";
    case "future":
      return `!stablehlo.future<${t.items.map(typeText).join(", ")}>`;
    case "none":
      return "none";
    case "witness":
      return "!shape.witness";
    case "quant":
    case "opaque":
      return t.text;
  }
}

function encodingText(a: RawAttr): string {
  if (a.k === "struct" && a.name === "type_extensions") {
    const bounds = (a.fields.bounds as number[]).map((b) => (b < 0 ? "?" : String(b))).join(", ");
    return `#stablehlo.bounds<${bounds}>`;
  }
  return a.k === "opaque" ? a.text : `#${a.k}`;
}

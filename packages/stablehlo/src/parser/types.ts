import { ModuleError } from "../errors.ts";
import type { ElemType } from "../elements.ts";
import { ELEM_TYPES } from "../elements.ts";
import type { ValueType } from "../ir.ts";
import { canonicalTypeText } from "../type-text.ts";
import type { Cursor } from "./cursor.ts";

const ELEM_BY_NAME = new Map<string, ElemType>(ELEM_TYPES.map((t) => [t, t]));
ELEM_BY_NAME.set("complex<f32>", "c64");
ELEM_BY_NAME.set("complex<f64>", "c128");
ELEM_BY_NAME.set("si8", "i8");
ELEM_BY_NAME.set("si16", "i16");
ELEM_BY_NAME.set("si32", "i32");
ELEM_BY_NAME.set("si64", "i64");

export function elemTypeFromName(name: string): ElemType | undefined {
  return ELEM_BY_NAME.get(name.replace(/\s+/g, ""));
}

/**
 * Parses `2x3xf32` (the inside of `tensor<...>`). Types outside the engine are UNSUPPORTED, or
 * with `lenient` kept as `other` in their canonical spelling.
 */
export function parseTensorBody(body: string, fail: (message: string) => Error, lenient = false): ValueType {
  if (lenient) {
    try {
      return parseTensorBody(body, fail);
    } catch (e) {
      if (!(e instanceof ModuleError) || e.code !== "UNSUPPORTED") throw e;
      const elem = /^(?:(?:\d+)x)*(f8\w+)$/.exec(body.trim());
      const asF8 = elem ? elemTypeFromName(elem[1] as string) : undefined;
      if (asF8) return { kind: "tensor", elem: asF8, shape: body.trim().split("x").slice(0, -1).map(Number) };
      return { kind: "other", text: canonicalTypeText(`tensor<${body}>`) };
    }
  }
  const shape: number[] = [];
  let rest = body.trim();
  const comma = rest.indexOf(",");
  if (comma >= 0 && !rest.slice(0, comma).includes("<")) rest = rest.slice(0, comma).trim(); // drop encoding
  for (;;) {
    const m = /^(\d+|\?)x/.exec(rest);
    if (!m) break;
    if (m[1] === "?") {
      throw new ModuleError("UNSUPPORTED", "dynamic tensor dimensions (?) are not supported", { type: body });
    }
    shape.push(Number(m[1]));
    rest = rest.slice(m[0].length);
  }
  const elem = elemTypeFromName(rest);
  if (elem?.startsWith("f8")) {
    throw new ModuleError("UNSUPPORTED", `element type ${rest} (8-bit float) is not supported`, { type: body });
  }
  if (!elem) {
    if (rest.startsWith("!quant")) {
      throw new ModuleError("UNSUPPORTED", `quantized element type ${rest} is not supported`, { type: body });
    }
    if (/^(i|ui|si|f|bf|f8\w*|complex<.*>)\d*\w*$/.test(rest)) {
      throw new ModuleError("UNSUPPORTED", `element type ${rest} is not supported`, { type: body });
    }
    throw fail(`unknown element type '${rest}'`);
  }
  return { kind: "tensor", elem, shape };
}

/** One type at the cursor: tensor<...>, tuple<...>, !stablehlo.token, or a bare element type (a rank-0 tensor). */
export function parseType(c: Cursor): ValueType {
  const t = c.peek();
  if (t.kind === "angled" && t.text === "tensor") {
    c.next();
    return parseTensorBody(t.body ?? "", (m) => c.error(m, t), c.source.lenient);
  }
  if (t.kind === "angled" && t.text === "tuple") {
    c.next();
    const inner = c.inside(t);
    const items: ValueType[] = [];
    while (!inner.atEnd()) {
      items.push(parseType(inner));
      if (!inner.eat(",")) break;
    }
    return { kind: "tuple", items };
  }
  if (t.kind === "bang" && t.text === "!stablehlo.token") {
    c.next();
    return { kind: "token" };
  }
  if (t.kind === "bang") {
    const text = `${t.text}${t.body !== undefined ? `<${t.body}>` : ""}`;
    if (c.source.lenient) {
      c.next();
      return { kind: "other", text: canonicalTypeText(text) };
    }
    throw new ModuleError("UNSUPPORTED", `type ${text} is not supported`);
  }
  if (
    c.source.lenient &&
    (t.kind === "angled" || t.kind === "ident") &&
    /^(memref|index|none|tf32|f4E2M1FN|f6E2M3FN|f6E3M2FN|f8E8M0FNU)$/.test(t.text)
  ) {
    c.next();
    return { kind: "other", text: canonicalTypeText(t.kind === "angled" ? `${t.text}<${t.body ?? ""}>` : t.text) };
  }
  if (t.kind === "angled" && t.text === "complex") {
    c.next();
    const elem = elemTypeFromName(`complex<${t.body}>`);
    if (!elem) throw c.error("unknown complex type", t);
    return { kind: "tensor", elem, shape: [] };
  }
  if (t.kind === "ident") {
    const elem = elemTypeFromName(t.text);
    if (elem) {
      c.next();
      return { kind: "tensor", elem, shape: [] };
    }
  }
  throw c.error("expected a type");
}

export function startsType(c: Cursor): boolean {
  const t = c.peek();
  return (
    (t.kind === "angled" && (t.text === "tensor" || t.text === "tuple" || t.text === "complex")) ||
    t.kind === "bang" ||
    (t.kind === "ident" && elemTypeFromName(t.text) !== undefined)
  );
}

/** `(t, t)` or a single type (results may be written without parentheses). */
export function parseTypeList(c: Cursor): ValueType[] {
  if (c.eat("(")) {
    const types: ValueType[] = [];
    if (c.eat(")")) return types;
    do {
      types.push(parseType(c));
      skipAttrDict(c);
    } while (c.eat(","));
    c.expect(")");
    return types;
  }
  return [parseType(c)];
}

/** Result attributes like `{jax.result_info = ""}` carry nothing the engine needs. */
export function skipAttrDict(c: Cursor): void {
  if (!c.at("{")) return;
  let depth = 0;
  do {
    const t = c.next();
    if (t.kind === "punct" && t.text === "{") depth++;
    else if (t.kind === "punct" && t.text === "}") depth--;
    else if (t.kind === "eof") throw c.error("unclosed '{'", t);
  } while (depth > 0);
}

/** Trailing signature of an op: `(a, b) -> r`, `a -> (r, s)`, or `t, t, ...`. */
export function parseSignature(c: Cursor): { operands: ValueType[] | null; results: ValueType[] } {
  if (c.at("(")) {
    const operands = parseTypeList(c);
    if (c.eat("->")) return { operands, results: parseTypeList(c) };
    return { operands: null, results: operands };
  }
  const list: ValueType[] = [parseType(c)];
  while (c.at(",")) {
    const save = c.peek(1);
    if (!(save.kind === "angled" || save.kind === "bang" || save.kind === "ident")) break;
    c.next();
    list.push(parseType(c));
  }
  if (c.eat("->")) return { operands: list, results: parseTypeList(c) };
  return { operands: null, results: list };
}

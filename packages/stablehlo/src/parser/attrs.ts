import type { Attr, AttrObject } from "../ir.ts";
import type { Cursor } from "./cursor.ts";
import { decodeDense } from "./dense.ts";
import type { Token } from "./lexer.ts";
import { parseType } from "./types.ts";
import { isTensorType } from "../ir.ts";

/**
 * MLIR attribute values as the engine keeps them (see ir.ts): numbers (type suffix dropped),
 * booleans, strings, enums as strings, lists, dictionaries, dense tensors as NDArrays, and the
 * #stablehlo.* structured attributes as objects of their fields.
 */
export function parseAttr(c: Cursor): Attr {
  const t = c.peek();
  if (t.kind === "punct" && t.text === "[") {
    c.next();
    const items: Attr[] = [];
    if (c.eat("]")) return items;
    do items.push(parseAttr(c));
    while (c.eat(","));
    c.expect("]");
    return items;
  }
  if (t.kind === "punct" && t.text === "{") return parseAttrDict(c);
  if (t.kind === "punct" && t.text === "(" && c.peek(1).kind === "number" && c.at(")", 2)) {
    // An axis reference's sub-axis: `(pre_size)size`.
    c.next();
    const preSize = parseNumber(c.next().text);
    c.expect(")");
    return { pre_size: preSize, size: parseNumber(c.expectKind("number", "a sub-axis size").text) };
  }
  if (t.kind === "punct" && t.text === "<") return skipAngled(c);
  if (t.kind === "number") {
    c.next();
    skipNumberType(c);
    return parseNumber(t.text);
  }
  if (t.kind === "string") {
    c.next();
    return t.text;
  }
  if (t.kind === "symbol") {
    c.next();
    return { symbol: t.text.slice(1) };
  }
  if (t.kind === "ident") {
    c.next();
    if (t.text === "true" || t.text === "unit") return true;
    if (t.text === "false") return false;
    skipNumberType(c);
    return t.text;
  }
  if (t.kind === "angled" && (t.text === "dense" || t.text === "dense_resource")) return parseDenseAttr(c);
  if (t.kind === "angled" && t.text === "array") {
    c.next();
    return parseArrayAttr(c, t);
  }
  if (t.kind === "hash") {
    c.next();
    return t.body === undefined ? t.text : parseHashBody(c, t);
  }
  if (t.kind === "angled" || t.kind === "bang") {
    c.next();
    return `${t.text}<${t.body ?? ""}>`;
  }
  throw c.error("expected an attribute value");
}

/** An attribute in bare angle brackets (`algorithm = <...>`), kept as its text. */
function skipAngled(c: Cursor): string {
  const parts: string[] = [];
  let depth = 0;
  do {
    const t = c.next();
    if (t.kind === "eof") throw c.error("unclosed '<'", t);
    if (t.kind === "punct" && t.text === "<") depth++;
    else if (t.kind === "punct" && t.text === ">") depth--;
    parts.push(t.text);
  } while (depth > 0);
  return parts.join(" ");
}

/** `: i64` after an integer, `: f32` after a float. Never a tensor type (that is an op signature). */
function skipNumberType(c: Cursor): void {
  if (c.at(":") && c.peek(1).kind === "ident" && /^(i|ui|si|f|bf)\d+$|^index$/.test(c.peek(1).text)) {
    c.next();
    c.next();
  }
}

export function parseNumber(text: string): number {
  if (/^-?0x/i.test(text)) return Number(BigInt(text.replace("-", ""))) * (text.startsWith("-") ? -1 : 1);
  return Number(text);
}

export function parseAttrDict(c: Cursor): AttrObject {
  c.expect("{");
  const out: Record<string, Attr> = {};
  while (!c.at("}")) {
    const key = c.next();
    if (key.kind !== "ident" && key.kind !== "string") throw c.error("expected an attribute name", key);
    out[key.text] = c.eat("=") ? parseAttr(c) : true;
    if (!c.eat(",")) break;
  }
  c.expect("}");
  return out;
}

export function parseDenseAttr(c: Cursor) {
  const t = c.next();
  if (t.text === "dense_resource") throw c.error("dense_resource blobs are not supported", t);
  c.expect(":");
  const typeToken = c.peek();
  const type = parseType(c);
  if (type.kind === "other") return otherDense(t.body ?? "", type.text, (m) => c.error(m, t));
  if (!isTensorType(type)) throw c.error("dense attribute needs a tensor type", typeToken);
  return decodeDense(t.body ?? "", type, (m) => c.error(m, t));
}

function parseArrayAttr(c: Cursor, t: Token): Attr[] {
  const inner = c.inside(t);
  inner.next(); // element type
  const items: Attr[] = [];
  if (!inner.eat(":")) return items;
  do items.push(parseAttr(inner));
  while (inner.eat(","));
  return items;
}

/**
 * `#stablehlo<comparison_direction LT>` -> "LT"; `#stablehlo.precision<DEFAULT>` -> "DEFAULT";
 * `#stablehlo.gather<offset_dims = [1], ...>` -> { offset_dims: [1], ... };
 * `#stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>` (or `raw ...`) -> conv dimension numbers.
 */
function parseHashBody(outer: Cursor, t: Token): Attr {
  const c = outer.inside(t);
  if (t.text === "#stablehlo.conv") {
    c.eat("raw");
    if (c.at("[")) return parseConvDimensions(c);
  }
  const first = c.peek();
  if (first.kind === "ident" && c.peek(1).kind === "ident" && c.peek(2).kind === "eof") return c.peek(1).text;
  if (first.kind === "ident" && c.peek(1).kind === "eof") return first.text;
  const out: Record<string, Attr> = {};
  while (!c.atEnd()) {
    const key = c.next();
    if (key.kind !== "ident") throw c.error("expected a field name", key);
    c.expect("=");
    out[key.text] = parseAttr(c);
    if (!c.eat(",")) break;
  }
  if (!c.atEnd()) throw c.error("unexpected text in attribute");
  return out;
}

/**
 * `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` into the spec's convolution dimension numbers.
 */
export function parseConvDimensions(c: Cursor): AttrObject {
  const side = (): string[] => {
    c.expect("[");
    const items: string[] = [];
    if (!c.at("]"))
      do items.push(c.next().text);
      while (c.eat(","));
    c.expect("]");
    return items;
  };
  const input = side();
  c.expect("x");
  const kernel = side();
  c.expect("->");
  const output = side();
  const spatial = (labels: string[]) =>
    labels
      .map((l, i) => [l, i] as const)
      .filter(([l]) => /^\d+$/.test(l))
      .sort((a, b) => Number(a[0]) - Number(b[0]))
      .map(([, i]) => i);
  return {
    input_batch_dimension: input.indexOf("b"),
    input_feature_dimension: input.indexOf("f"),
    input_spatial_dimensions: spatial(input),
    kernel_input_feature_dimension: kernel.indexOf("i"),
    kernel_output_feature_dimension: kernel.indexOf("o"),
    kernel_spatial_dimensions: spatial(kernel),
    output_batch_dimension: output.indexOf("b"),
    output_feature_dimension: output.indexOf("f"),
    output_spatial_dimensions: spatial(output),
  };
}

/**
 * A dense attribute of a type the engine does not run (lenient reads only): index elements are
 * stored as i64, as MLIR does, and kept as hex; others keep their literal text.
 */
function otherDense(body: string, type: string, fail: (m: string) => Error): Attr {
  const m = /^tensor<((?:\d+x)*)index>$/.exec(type);
  if (!m) return { type, literal: body.trim() };
  const shape = (m[1] ?? "")
    .split("x")
    .filter((d) => d !== "")
    .map(Number);
  const values = decodeDense(body, { kind: "tensor", elem: "i64", shape }, fail);
  const bytes = new Uint8Array(values.data.buffer, values.data.byteOffset, values.data.byteLength);
  let hex = "0x";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0").toUpperCase();
  return { type, hex };
}

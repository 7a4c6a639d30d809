import type { NDArray } from "../elements.ts";
import type { Attr, BlockArg, Func, Module, Op, Region, ValueType } from "../ir.ts";
import { parseAttr, parseAttrDict, parseConvDimensions, parseDenseAttr } from "./attrs.ts";
import { Cursor } from "./cursor.ts";
import { SourceText } from "./lexer.ts";
import { canonicalize, reducerRegion } from "./canonical.ts";
import { parseSignature, parseType, parseTypeList, skipAttrDict } from "./types.ts";

/**
 * Parses a StableHLO module in the pretty-printed form JAX emits or the generic form. A text
 * with bare func.func at top level (the interpreter's test files) is read as one module.
 * Errors are MODULE_INVALID with line:column (UNSUPPORTED for types outside the engine).
 */
export function parseModule(text: string, origin = "<module>", options: { lenient?: boolean } = {}): Module {
  const c = Cursor.over(new SourceText(text, origin, options.lenient ?? false));
  const funcs: Func[] = [];
  let name: string | null = null;
  skipAliases(c);
  if (c.eat("module")) {
    if (c.peek().kind === "symbol") name = c.next().text.slice(1);
    if (c.eat("attributes")) parseAttrDict(c);
    c.expect("{");
    while (!c.eat("}")) funcs.push(parseFunc(c));
    skipAliases(c);
  } else {
    while (!c.atEnd()) {
      funcs.push(parseFunc(c));
      skipAliases(c);
    }
  }
  if (!c.atEnd()) throw c.error("unexpected text after the module");
  return { name, funcs };
}

/** `#loc3 = loc(...)` lines (the lexer already dropped the loc(...)). */
function skipAliases(c: Cursor): void {
  while (c.peek().kind === "hash" && c.at("=", 1)) {
    c.next();
    c.next();
    const aliasFollows = c.peek().kind === "hash" && c.at("=", 1);
    if (!aliasFollows && (c.peek().kind === "hash" || c.peek().kind === "angled" || c.peek().kind === "string")) {
      parseAttr(c);
    }
  }
}

function parseFunc(c: Cursor): Func {
  if (!c.eat("func.func") && !c.eat("func")) throw c.error("expected func.func");
  let isPublic = true;
  if (c.eat("private")) isPublic = false;
  else c.eat("public");
  const sym = c.expectKind("symbol", "a function name");
  c.expect("(");
  const args: BlockArg[] = [];
  if (!c.at(")")) {
    do {
      const name = c.expectKind("value", "an argument name").text;
      c.expect(":");
      args.push({ name, type: parseType(c) });
      skipAttrDict(c);
    } while (c.eat(","));
  }
  c.expect(")");
  let resultTypes: ValueType[] = [];
  if (c.eat("->")) resultTypes = parseTypeList(c);
  if (c.eat("attributes")) parseAttrDict(c);
  // A declaration (`func.func private @f(...)`) has no body.
  if (!c.at("{")) return { name: sym.text.slice(1), isPublic, args, resultTypes, body: [] };
  c.expect("{");
  const body = parseOps(c);
  c.expect("}");
  return { name: sym.text.slice(1), isPublic, args, resultTypes, body };
}

/** Ops up to the closing `}` of the enclosing body or region (not consumed). */
function parseOps(c: Cursor): Op[] {
  const ops: Op[] = [];
  while (!c.at("}")) {
    if (c.atEnd()) throw c.error("unexpected end of text: missing '}'");
    ops.push(parseOp(c));
  }
  return ops;
}

function parseResults(c: Cursor): string[] {
  const results: string[] = [];
  const t = c.peek();
  if (t.kind !== "value") return results;
  if (!(c.at("=", 1) || c.at(",", 1) || c.at(":", 1))) return results;
  for (;;) {
    const v = c.expectKind("value", "a result name").text;
    if (c.eat(":")) {
      const count = Number(c.expectKind("number", "a result count").text);
      for (let i = 0; i < count; i++) results.push(`${v}#${i}`);
    } else results.push(v);
    if (!c.eat(",")) break;
  }
  c.expect("=");
  return results;
}

function parseOp(c: Cursor): Op {
  const start = c.peek();
  const results = parseResults(c);
  const nameToken = c.next();
  if (nameToken.kind === "string") return parseGenericOp(c, nameToken.text, results, start.offset);
  if (nameToken.kind !== "ident") throw c.error("expected an operation", nameToken);
  return parseCustomOp(c, nameToken.text, results, start.offset);
}

function parseGenericOp(c: Cursor, name: string, results: string[], offset: number): Op {
  c.expect("(");
  const operands: string[] = [];
  if (!c.at(")")) {
    do operands.push(c.expectKind("value", "an operand").text);
    while (c.eat(","));
  }
  c.expect(")");
  let attrs: Record<string, Attr> = {};
  if (c.at("<") && c.at("{", 1)) {
    c.next();
    attrs = { ...parseAttrDict(c) };
    c.expect(">");
  }
  const regions: Region[] = [];
  if (c.at("(") && c.at("{", 1)) {
    c.next();
    do regions.push(parseRegion(c, []));
    while (c.eat(","));
    c.expect(")");
  }
  if (c.at("{")) attrs = { ...attrs, ...parseAttrDict(c) };
  c.expect(":");
  const sig = parseSignature(c);
  return canonicalize({
    name: qualify(name),
    results,
    operands,
    attrs,
    regions,
    resultTypes: sig.results,
    operandTypes: sig.operands,
    offset,
  });
}

/** `{ ^bb0(%a: t, ...): ops }` or `{ ops }` with the block arguments given outside. */
function parseRegion(c: Cursor, outerArgs: BlockArg[]): Region {
  c.expect("{");
  let args = outerArgs;
  if (c.peek().kind === "block") {
    c.next();
    args = [];
    if (c.eat("(")) {
      if (!c.at(")")) {
        do {
          const name = c.expectKind("value", "a block argument").text;
          c.expect(":");
          args.push({ name, type: parseType(c) });
        } while (c.eat(","));
      }
      c.expect(")");
    }
    c.expect(":");
  }
  const ops = parseOps(c);
  c.expect("}");
  return { args, ops };
}

const BARE_NAMES: Record<string, string> = { call: "func.call", return: "func.return" };

function qualify(name: string): string {
  return BARE_NAMES[name] ?? name;
}

/**
 * The custom (pretty) forms. Rather than one grammar per op, the prefix before the signature
 * is read as a sequence of items (operands, `key = value` attributes, enums, `(... init: ...)`
 * groups, `applies op`, slice ranges), then `canonicalize` maps them to the spec's attributes.
 */
function parseCustomOp(c: Cursor, rawName: string, results: string[], offset: number): Op {
  const name = qualify(rawName);
  const operands: string[] = [];
  const inits: string[] = [];
  const regionArgs: BlockArg[] = [];
  const attrs: Record<string, Attr> = {};
  const enums: string[] = [];
  const regions: Region[] = [];
  let constant: Attr | undefined;
  for (;;) {
    const t = c.peek();
    if (t.kind === "eof" || (t.kind === "punct" && (t.text === ":" || t.text === "}"))) break;
    if (isNextOpStart(c)) break;
    if (t.kind === "value") {
      c.next();
      operands.push(t.text);
      if (c.at("[")) attrs._brackets = parseBrackets(c);
    } else if (t.kind === "punct" && t.text === "(") {
      c.next();
      parseGroup(c, operands, inits, regionArgs, attrs);
    } else if (t.kind === "punct" && t.text === "{" && c.peek(1).kind === "block") {
      regions.push(parseRegion(c, []));
    } else if (t.kind === "punct" && t.text === "{") {
      Object.assign(attrs, parseAttrDict(c));
    } else if (t.kind === "punct" && t.text === ",") {
      c.next();
    } else if (t.kind === "symbol") {
      c.next();
      attrs._symbol = t.text.slice(1);
    } else if (t.kind === "angled" && t.text === "dense") {
      constant = parseDenseAttr(c);
    } else if (t.kind === "string") {
      c.next();
      attrs._name = t.text;
    } else if (t.kind === "ident" && t.text === "applies") {
      c.next();
      attrs._applies = c.expectKind("ident", "a reducer op").text;
    } else if (t.kind === "ident" && t.text === "across") {
      c.next();
    } else if (t.kind === "ident" && (t.text === "inits" || t.text === "attributes")) {
      // chlo.scan(%xs) inits(%carry) ... attributes {...}: the inputs end where the inits start
      c.next();
      if (t.text === "inits") attrs._inits_at = operands.length;
    } else if (t.kind === "ident" && c.at("=", 1)) {
      c.next();
      c.next();
      attrs[t.text] = parseCustomAttrValue(c, t.text);
    } else if (t.kind === "ident") {
      c.next();
      enums.push(t.text);
    } else {
      throw c.error(`unexpected token in ${name}`);
    }
  }
  let resultTypes: ValueType[] = [];
  let operandTypes: ValueType[] | null = null;
  // A dense literal consumed its own `: type`; anything after is the op's signature.
  if (c.eat(":")) {
    const sig = parseSignature(c);
    resultTypes = sig.results;
    operandTypes = sig.operands;
  }
  if (constant !== undefined && name === "stablehlo.constant" && resultTypes.length === 0) {
    const value = constant as NDArray;
    resultTypes = [{ kind: "tensor", elem: value.type, shape: [...value.shape] }];
  }
  parseTrailingRegions(c, regions, regionArgs);
  if (constant !== undefined) attrs.value = constant;
  if (enums.length > 0) attrs._enums = enums;
  if (inits.length > 0) operands.push(...inits);
  if (typeof attrs._applies === "string") {
    regions.push(reducerRegion(attrs._applies, operandTypes, resultTypes));
  }
  return canonicalize({ name, results, operands, attrs, regions, resultTypes, operandTypes, offset });
}

/** `%x =`, `%x:2 =` or `%a, %b =` starts the next op: ops without a signature end there. */
function isNextOpStart(c: Cursor): boolean {
  const t = c.peek();
  if (t.kind !== "value") {
    return (
      t.kind === "ident" &&
      (t.text === "return" || t.text === "call" || /^(stablehlo|func|chlo|check|interpreter)\./.test(t.text))
    );
  }
  let j = 0;
  while (c.peek(j).kind === "value") {
    j++;
    if (c.at(":", j) && c.peek(j + 1).kind === "number") j += 2;
    if (c.at("=", j)) return true;
    if (!c.at(",", j)) return false;
    j++;
  }
  return false;
}

/** `(%a, %b)`, `(%x init: %y)`, `(%arg0 = %init, ...)`, `(%v, k = 2)`. */
function parseGroup(
  c: Cursor,
  operands: string[],
  inits: string[],
  regionArgs: BlockArg[],
  attrs: Record<string, Attr>,
): void {
  if (c.eat(")")) return;
  do {
    const t = c.next();
    if (t.kind === "value" && c.eat("init")) {
      c.expect(":");
      operands.push(t.text);
      inits.push(c.expectKind("value", "an init value").text);
    } else if (t.kind === "value" && c.eat("=")) {
      operands.push(c.expectKind("value", "an initial value").text);
      regionArgs.push({ name: t.text, type: { kind: "token" } });
    } else if (t.kind === "value") {
      operands.push(t.text);
    } else if (t.kind === "ident" && c.eat("=")) {
      attrs[t.text] = parseAttr(c);
    } else throw c.error("unexpected token in operand list", t);
  } while (c.eat(","));
  c.expect(")");
}

/** `[0:2, 1:3:1]` (slice) or `[0]` (get_tuple_element). */
function parseBrackets(c: Cursor): Attr {
  c.expect("[");
  const ranges: Attr[] = [];
  if (!c.at("]")) {
    do {
      const parts: number[] = [Number(c.expectKind("number", "an index").text)];
      while (c.eat(":")) parts.push(Number(c.expectKind("number", "an index").text));
      ranges.push(parts);
    } while (c.eat(","));
  }
  c.expect("]");
  return ranges;
}

/** Values of pretty-form attributes, some of which have syntax of their own. */
function parseCustomAttrValue(c: Cursor, key: string): Attr {
  if (key === "dim_numbers") return parseConvDimensions(c);
  if (key === "window") return parseAttrDict(c);
  const value = parseAttr(c);
  // `contracting_dims = [1] x [0]`
  if (c.at("x") && c.at("[", 1)) {
    c.next();
    return [value, parseAttr(c)];
  }
  return value;
}

/** `cond { } do { }` (while), `reducer(%a: t, %b: t) (%c: t, %d: t) { }` (reduce). */
function parseTrailingRegions(c: Cursor, regions: Region[], whileArgs: BlockArg[]): void {
  if (c.at("cond") && c.at("{", 1)) {
    c.next();
    regions.push(parseRegion(c, whileArgs));
    c.expect("do");
    regions.push(parseRegion(c, whileArgs));
    return;
  }
  if (c.at("reducer") && c.at("(", 1)) {
    c.next();
    const lhs: BlockArg[] = [];
    const rhs: BlockArg[] = [];
    while (c.eat("(")) {
      const a = c.expectKind("value", "a reducer argument").text;
      c.expect(":");
      const at = parseType(c);
      c.expect(",");
      const b = c.expectKind("value", "a reducer argument").text;
      c.expect(":");
      const bt = parseType(c);
      c.expect(")");
      lhs.push({ name: a, type: at });
      rhs.push({ name: b, type: bt });
    }
    regions.push(parseRegion(c, [...lhs, ...rhs]));
  }
}

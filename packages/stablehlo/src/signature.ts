/**
 * Reads the types of `func.func [public] @main(...) -> (...)` (or its generic-form twin) from
 * StableHLO text without parsing the module: only the header is scanned, skipping argument
 * names, attribute dictionaries, `loc(...)` and string literals, so checking a bundle's modules
 * costs nothing next to compiling them. Unlike the full parser it accepts every element type
 * and dynamic dimensions: which of them a consumer supports is the consumer's decision.
 */

/** A declared argument or result type: element type as MLIR spells it, shape row-major, `?` as -1. */
export interface DeclaredType {
  readonly element: string;
  readonly shape: readonly number[];
  /** false for a bare scalar type (`i32`), true for `tensor<...>`. */
  readonly isTensor: boolean;
}

export interface DeclaredSignature {
  readonly args: readonly DeclaredType[];
  readonly results: readonly DeclaredType[];
}

export class SignatureSyntaxError extends Error {}

const MAIN_HEADER = /func\.func\s+(?:(?:public|private|nested)\s+)?@main\s*\(/;

/** Parses the @main signature; throws SignatureSyntaxError when the text has none. */
export function readMainSignature(text: string): DeclaredSignature {
  const match = MAIN_HEADER.exec(text);
  if (!match) return parseGenericMain(text);
  const argsStart = match.index + match[0].length;
  const argsEnd = findClosing(text, argsStart - 1);
  const args = splitTopLevel(text.slice(argsStart, argsEnd)).map((item, i) => parseArgument(item, i));
  const results = parseResults(text, argsEnd + 1);
  return { args, results };
}

/**
 * The generic op form (`mlir-opt --mlir-print-op-generic`) spells the signature as an attribute:
 * `"func.func"() <{function_type = (tensor<..>, ..) -> .., sym_name = "main"}>`.
 */
function parseGenericMain(text: string): DeclaredSignature {
  for (let at = text.indexOf('"func.func"'); at !== -1; at = text.indexOf('"func.func"', at + 1)) {
    const open = text.indexOf("<{", at);
    if (open === -1) break;
    const attributes = text.slice(open, findClosing(text, open) + 1);
    if (!/\bsym_name\s*=\s*"main"/.test(attributes)) continue;
    const typeAt = /\bfunction_type\s*=\s*\(/.exec(attributes);
    if (!typeAt) throw new SignatureSyntaxError("the generic @main has no function_type");
    const argsOpen = typeAt.index + typeAt[0].length - 1;
    const argsEnd = findClosing(attributes, argsOpen);
    const args = splitTopLevel(attributes.slice(argsOpen + 1, argsEnd)).map((item, i) =>
      parseType(item, `argument ${i}`),
    );
    return { args, results: parseResults(attributes, argsEnd + 1) };
  }
  throw new SignatureSyntaxError("no `func.func @main(...)` found");
}

/** Index of the bracket closing the one at `open`, skipping strings and nested brackets. */
function findClosing(text: string, open: number): number {
  const closers: Record<string, string> = { "(": ")", "[": "]", "{": "}", "<": ">" };
  const stack: string[] = [];
  for (let i = open; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"') {
      i = skipString(text, i);
      continue;
    }
    if (c === "-" && text[i + 1] === ">") {
      i++; // the arrow of a function type, not a closing angle bracket
      continue;
    }
    const closer = closers[c];
    if (closer) {
      stack.push(closer);
    } else if (c === stack[stack.length - 1]) {
      stack.pop();
      if (stack.length === 0) return i;
    }
  }
  throw new SignatureSyntaxError("unbalanced brackets in the @main signature");
}

function skipString(text: string, quote: number): number {
  for (let i = quote + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i;
  }
  throw new SignatureSyntaxError("unterminated string in the @main signature");
}

/** Splits on commas that are not nested inside brackets or strings. */
function splitTopLevel(list: string): string[] {
  const items: string[] = [];
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as string;
    if (c === '"') i = skipString(list, i);
    else if (c === "-" && list[i + 1] === ">") i++;
    else if ("([{<".includes(c)) i = findClosing(list, i);
    else if (c === ",") {
      items.push(list.slice(start, i));
      start = i + 1;
    }
  }
  const last = list.slice(start);
  if (last.trim() !== "") items.push(last);
  return items.map((s) => s.trim());
}

function parseArgument(item: string, index: number): DeclaredType {
  // `%arg0: tensor<...> {attrs} loc(...)`; declarations without names carry just the type.
  const typeText = item.startsWith("%") ? item.slice(item.indexOf(":") + 1).trim() : item;
  return parseType(typeText, `argument ${index}`);
}

function parseResults(text: string, from: number): DeclaredType[] {
  let i = from;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  if (!text.startsWith("->", i)) return [];
  i += 2;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  if (text[i] === "(") {
    const end = findClosing(text, i);
    return splitTopLevel(text.slice(i + 1, end)).map((item, n) => parseType(item, `result ${n}`));
  }
  return [parseType(text.slice(i), "result 0")];
}

/** A declared type from its StableHLO spelling (`tensor<?x3xbf16>`, `i32`). */
export function declaredTypeOf(text: string): DeclaredType {
  return parseType(text, "the type");
}

/** Parses the type at the start of `text` (anything after it, attributes or loc, is ignored). */
function parseType(text: string, what: string): DeclaredType {
  if (text.startsWith("tensor<")) {
    const end = findClosing(text, "tensor".length);
    return parseTensorBody(text.slice("tensor<".length, end), what);
  }
  const scalar = /^[A-Za-z0-9_]+/.exec(text)?.[0] ?? "";
  if (scalar === "")
    throw new SignatureSyntaxError(`${what} has type "${text.split(/\s/)[0]}", which is not a tensor type`);
  return { element: scalar, shape: [], isTensor: false };
}

/** A dimension and its `x`: starts like one (digit, `?`, `*`) so element types never match. */
const DIM_PREFIX = /^([0-9?*][^x]*)x/;

function parseTensorBody(body: string, what: string): DeclaredType {
  // Drop a trailing `, #encoding` before splitting the dims.
  const withoutEncoding = splitTopLevel(body)[0] ?? "";
  // Leading `<dim>x` groups are the shape; the rest (`f32`, `complex<f32>`) is the element type.
  const shape: number[] = [];
  let rest = withoutEncoding.trim();
  for (let m = DIM_PREFIX.exec(rest); m; m = DIM_PREFIX.exec(rest)) {
    const dim = m[1] as string;
    if (dim === "?") shape.push(-1);
    else if (/^\d+$/.test(dim)) shape.push(Number(dim));
    else throw new SignatureSyntaxError(`${what} has dimension "${dim}" in tensor<${body}>`);
    rest = rest.slice(m[0].length);
  }
  const element = rest;
  return { element, shape, isTensor: true };
}

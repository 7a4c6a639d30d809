import { dtypeFromMlir } from "../dtypes.ts";
import type { ModuleSignature, SignatureType } from "./types.ts";

/**
 * Reads the types of `func.func [public] @main(...) -> (...)` (or its generic-form twin) from StableHLO text, without an MLIR
 * parser: only the header is scanned, skipping argument names, attribute dictionaries, `loc(...)`
 * and string literals. Shapes come back row-major with `?` (dynamic) as -1.
 */

export class SignatureSyntaxError extends Error {}

const MAIN_HEADER = /func\.func\s+(?:(?:public|private|nested)\s+)?@main\s*\(/;

/** Parses the @main signature; throws SignatureSyntaxError when the text has none. */
export function parseMainSignature(text: string): ModuleSignature {
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
function parseGenericMain(text: string): ModuleSignature {
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

function parseArgument(item: string, index: number): SignatureType {
  // `%arg0: tensor<...> {attrs} loc(...)`; declarations without names carry just the type.
  const typeText = item.startsWith("%") ? item.slice(item.indexOf(":") + 1).trim() : item;
  return parseType(typeText, `argument ${index}`);
}

function parseResults(text: string, from: number): SignatureType[] {
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

/** Parses the type at the start of `text` (anything after it, attributes or loc, is ignored). */
function parseType(text: string, what: string): SignatureType {
  if (text.startsWith("tensor<")) {
    const end = findClosing(text, "tensor".length);
    return parseTensorBody(text.slice("tensor<".length, end), what);
  }
  const scalar = /^[A-Za-z0-9_]+/.exec(text)?.[0] ?? "";
  const dtype = dtypeFromMlir(scalar);
  if (!dtype)
    throw new SignatureSyntaxError(`${what} has type "${text.split(/\s/)[0]}", which is not a supported tensor type`);
  return { dtype, shape: [] };
}

function parseTensorBody(body: string, what: string): SignatureType {
  // Drop a trailing `, #encoding` before splitting the dims.
  const withoutEncoding = splitTopLevel(body)[0] ?? "";
  const parts = withoutEncoding.split("x");
  const element = parts.pop() ?? "";
  const dtype = dtypeFromMlir(element.trim());
  if (!dtype) throw new SignatureSyntaxError(`${what} has element type "${element}", which is not supported`);
  const shape = parts.map((p) => {
    if (p === "?") return -1;
    if (!/^\d+$/.test(p)) throw new SignatureSyntaxError(`${what} has dimension "${p}" in tensor<${body}>`);
    return Number(p);
  });
  return { dtype, shape };
}

/** `tensor<1x64xf32>` style rendering for messages. */
export function formatSignatureType(type: SignatureType, mlirName: string): string {
  return `tensor<${[...type.shape.map((d) => (d === -1 ? "?" : String(d))), mlirName].join("x")}>`;
}

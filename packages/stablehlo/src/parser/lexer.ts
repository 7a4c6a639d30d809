import { ModuleError } from "../errors.ts";

/**
 * Tokens of MLIR text. Types and a few attribute forms whose insides use their own syntax
 * (`tensor<2x3xf32>`, `dense<...>`, `array<i64: 1, 2>`, `#stablehlo.gather<...>`) are captured
 * whole as one token with the text between the angle brackets in `body`, so the shape syntax
 * `2x3xf32` never reaches the general tokenizer. `loc(...)` is dropped here.
 */
export type TokenKind =
  | "value" // %name, %name#3
  | "symbol" // @name
  | "block" // ^bb0
  | "hash" // #name or #dialect.attr, body set when followed by <...>
  | "bang" // !dialect.type
  | "string"
  | "number"
  | "ident"
  | "angled" // ident<...> (tensor, tuple, complex, dense, array, ...), body = inside
  | "punct"
  | "eof";

export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly body?: string;
  readonly offset: number;
  /** Source offset where `body` starts. */
  readonly bodyOffset?: number;
}

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_.$]/;
const VALUE_PART = /[A-Za-z0-9_.$-]/;
const ANGLED = new Set([
  "tensor",
  "tuple",
  "complex",
  "dense",
  "array",
  "vector",
  "memref",
  "dense_resource",
  "sparse",
]);

export class SourceText {
  private lineStarts: number[] | null = null;
  constructor(
    readonly text: string,
    readonly origin: string,
    /** Keep types the engine does not run as `other` instead of reporting them UNSUPPORTED. */
    readonly lenient = false,
  ) {}

  position(offset: number): { line: number; column: number } {
    if (!this.lineStarts) {
      const starts = [0];
      for (let i = 0; i < this.text.length; i++) if (this.text.charCodeAt(i) === 10) starts.push(i + 1);
      this.lineStarts = starts;
    }
    const starts = this.lineStarts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (starts[lo] as number) + 1 };
  }

  /** MODULE_INVALID with line:column and the offending line, for every parse error. */
  error(offset: number, message: string): ModuleError {
    const { line, column } = this.position(offset);
    const lineText = this.text.slice(offset - column + 1).split("\n", 1)[0] ?? "";
    const snippet = this.text.slice(offset, offset + 40).split("\n", 1)[0] ?? "";
    return new ModuleError(
      "MODULE_INVALID",
      `${this.origin}:${line}:${column}: ${message} at '${snippet}'\n  ${lineText.trim()}`,
      { origin: this.origin, line, column, text: snippet },
    );
  }
}

/** Tokens of source.text[from, to): sub-ranges re-tokenize the bodies of angled tokens. */
export function tokenize(source: SourceText, from = 0, to = source.text.length): Token[] {
  const s = source.text;
  const n = to;
  const tokens: Token[] = [];
  let i = from;
  const readWhile = (re: RegExp, from: number): number => {
    let j = from;
    while (j < n && re.test(s[j] as string)) j++;
    return j;
  };
  /** Index just past the `>` that closes the `<` at `open`, skipping nested <> and strings. */
  const closeAngle = (open: number): number => {
    let depth = 0;
    for (let j = open; j < n; j++) {
      const c = s[j];
      if (c === '"') {
        j = skipString(j);
        continue;
      }
      if (c === "<") depth++;
      else if (c === ">" && s[j - 1] !== "-") {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    throw source.error(open, "unclosed '<'");
  };
  const skipString = (open: number): number => {
    // indexOf jumps over long strings (hex blobs of inlined weights) at memchr speed
    let j = open + 1;
    for (;;) {
      const quote = s.indexOf('"', j);
      if (quote < 0 || quote >= n) throw source.error(open, "unterminated string");
      let backslashes = 0;
      for (let k = quote - 1; k > open && s.charCodeAt(k) === 92; k--) backslashes++;
      if (backslashes % 2 === 0) return quote;
      j = quote + 1;
    }
  };
  const skipParens = (open: number): number => {
    let depth = 0;
    for (let j = open; j < n; j++) {
      const c = s[j];
      if (c === '"') j = skipString(j);
      else if (c === "(") depth++;
      else if (c === ")" && --depth === 0) return j + 1;
    }
    throw source.error(open, "unclosed '('");
  };

  while (i < n) {
    const c = s[i] as string;
    if (c === " " || c === "\n" || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    if (c === "/" && s[i + 1] === "/") {
      while (i < n && s[i] !== "\n") i++;
      continue;
    }
    const start = i;
    if (c === "%") {
      const end = readWhile(VALUE_PART, i + 1);
      let j = end;
      if (s[j] === "#" && /[0-9]/.test(s[j + 1] ?? "")) j = readWhile(/[0-9]/, j + 1);
      if (end === i + 1) throw source.error(i, "expected a value name after '%'");
      tokens.push({ kind: "value", text: s.slice(i, j), offset: start });
      i = j;
      continue;
    }
    if (c === "@") {
      if (s[i + 1] === '"') {
        const end = skipString(i + 1);
        tokens.push({
          kind: "symbol",
          text: `@${decodeString(source, s.slice(i + 1, end + 1), i + 1)}`,
          offset: start,
        });
        i = end + 1;
      } else {
        const end = readWhile(IDENT_PART, i + 1);
        tokens.push({ kind: "symbol", text: s.slice(i, end), offset: start });
        i = end;
      }
      continue;
    }
    if (c === "^") {
      const end = readWhile(IDENT_PART, i + 1);
      tokens.push({ kind: "block", text: s.slice(i, end), offset: start });
      i = end;
      continue;
    }
    if (c === "#" || c === "!") {
      const end = readWhile(IDENT_PART, i + 1);
      const text = s.slice(i, end);
      if (s[end] === "<") {
        const close = closeAngle(end);
        tokens.push({
          kind: c === "#" ? "hash" : "bang",
          text,
          body: s.slice(end + 1, close - 1),
          bodyOffset: end + 1,
          offset: start,
        });
        i = close;
      } else {
        tokens.push({ kind: c === "#" ? "hash" : "bang", text, offset: start });
        i = end;
      }
      continue;
    }
    if (c === '"') {
      const end = skipString(i);
      tokens.push({
        kind: "string",
        text: decodeString(source, s.slice(i, end + 1), i),
        offset: start,
      });
      i = end + 1;
      continue;
    }
    if (/[0-9]/.test(c) || ((c === "-" || c === "+") && /[0-9]/.test(s[i + 1] ?? ""))) {
      let j = i + 1;
      if (c === "0" && (s[j] === "x" || s[j] === "X")) j = readWhile(/[0-9A-Fa-f]/, j + 1);
      else {
        j = readWhile(/[0-9]/, j);
        if (s[j] === "." && /[0-9]/.test(s[j + 1] ?? "")) j = readWhile(/[0-9]/, j + 1);
        if ((s[j] === "e" || s[j] === "E") && /[-+0-9]/.test(s[j + 1] ?? "")) j = readWhile(/[0-9]/, j + 2);
      }
      tokens.push({ kind: "number", text: s.slice(i, j), offset: start });
      i = j;
      continue;
    }
    if (IDENT_START.test(c)) {
      const end = readWhile(IDENT_PART, i + 1);
      const text = s.slice(i, end);
      if (text === "loc" && s[end] === "(") {
        i = skipParens(end);
        continue;
      }
      if (ANGLED.has(text) && s[end] === "<") {
        const close = closeAngle(end);
        tokens.push({ kind: "angled", text, body: s.slice(end + 1, close - 1), bodyOffset: end + 1, offset: start });
        i = close;
        continue;
      }
      tokens.push({ kind: "ident", text, offset: start });
      i = end;
      continue;
    }
    if (c === "-" && s[i + 1] === ">") {
      tokens.push({ kind: "punct", text: "->", offset: start });
      i += 2;
      continue;
    }
    if ("()[]{}<>,:=*?|+-".includes(c)) {
      tokens.push({ kind: "punct", text: c, offset: start });
      i++;
      continue;
    }
    throw source.error(i, `unexpected character '${c}'`);
  }
  tokens.push({ kind: "eof", text: "", offset: n });
  return tokens;
}

/** An MLIR string literal: JSON escapes plus `\XX` hex bytes. */
function decodeString(source: SourceText, literal: string, offset: number): string {
  try {
    return JSON.parse(literal.replace(/\\([0-9A-Fa-f]{2})/g, "\\u00$1"));
  } catch {
    throw source.error(offset, "invalid string literal");
  }
}

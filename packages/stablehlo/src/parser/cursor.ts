import { type SourceText, type Token, tokenize } from "./lexer.ts";

/** A position in a token list with the small vocabulary every parsing function uses. */
export class Cursor {
  private pos = 0;
  constructor(
    readonly source: SourceText,
    private readonly tokens: Token[],
  ) {}

  static over(source: SourceText, from?: number, to?: number): Cursor {
    return new Cursor(source, tokenize(source, from, to));
  }

  /** A cursor over the inside of an angled / hash token (`tensor<...>` -> `...`). */
  inside(token: Token): Cursor {
    const from = token.bodyOffset ?? token.offset;
    return Cursor.over(this.source, from, from + (token.body ?? "").length);
  }

  peek(ahead = 0): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)] as Token;
  }

  next(): Token {
    const t = this.peek();
    if (this.pos < this.tokens.length - 1) this.pos++;
    return t;
  }

  atEnd(): boolean {
    return this.peek().kind === "eof";
  }

  /** True when the next token has this text (punctuation or identifier). */
  at(text: string, ahead = 0): boolean {
    const t = this.peek(ahead);
    return (t.kind === "punct" || t.kind === "ident") && t.text === text;
  }

  eat(text: string): boolean {
    if (!this.at(text)) return false;
    this.next();
    return true;
  }

  expect(text: string): Token {
    if (!this.at(text)) throw this.error(`expected '${text}'`);
    return this.next();
  }

  expectKind(kind: Token["kind"], what: string): Token {
    if (this.peek().kind !== kind) throw this.error(`expected ${what}`);
    return this.next();
  }

  error(message: string, token: Token = this.peek()): Error {
    return this.source.error(token.offset, message);
  }
}

import { badRequest } from "../http-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8Checked = new TextDecoder("utf-8");

/**
 * JSON.parse of a UTF-8 body that also takes the NaN / Infinity / -Infinity literals Python's
 * json.dumps writes (tritonclient and KServe's client send them for float tensors). Strict JSON is
 * tried first; only a body that fails and contains one of the literals is rewritten, turning them
 * into strings the float decoders accept and the integer decoders reject with a clear message.
 *
 * Every step is one linear pass over the bytes, so a body full of literals costs about what a
 * plain body of its size costs (building the rewrite as a string, one piece per literal, took
 * six times as long for a 48 MB body of NaNs, and every other request waited behind it).
 */
export function parseJsonLenient(bytes: Uint8Array, what: string): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw badRequest(`${what} is not valid UTF-8`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    if (hasLiteral(text)) {
      const quoted = quoteNonFinite(bytes);
      if (quoted !== null) {
        try {
          return JSON.parse(utf8Checked.decode(quoted));
        } catch {
          // fall through to the original message, which points at the real problem
        }
      }
    }
    throw badRequest(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

function hasLiteral(text: string): boolean {
  return text.includes("NaN") || text.includes("Infinity");
}

const QUOTE = 34;
const BACKSLASH = 92;
const NAN = [78, 97, 78]; // NaN
const INFINITY = [73, 110, 102, 105, 110, 105, 116, 121]; // Infinity

/**
 * Quotes the non-finite literals that appear outside strings, byte by byte into one buffer
 * (a literal of 3 bytes becomes 5, so the output is at most 5/3 of the input). Null when there
 * was nothing to quote.
 */
function quoteNonFinite(src: Uint8Array): Uint8Array | null {
  const out = new Uint8Array(Math.ceil((src.length * 5) / 3) + 2);
  let o = 0;
  let quoted = 0;
  let inString = false;
  const n = src.length;
  for (let i = 0; i < n; i++) {
    const c = src[i] as number;
    if (inString) {
      out[o++] = c;
      if (c === BACKSLASH && i + 1 < n) out[o++] = src[++i] as number;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      out[o++] = c;
      continue;
    }
    const negative = c === 45 /* - */ && src[i + 1] === 73;
    const start = negative ? i + 1 : i;
    const literal = src[start] === 78 ? NAN : src[start] === 73 ? INFINITY : null;
    if (literal && matches(src, start, literal)) {
      out[o++] = QUOTE;
      if (negative) out[o++] = 45;
      for (const b of literal) out[o++] = b;
      out[o++] = QUOTE;
      i = start + literal.length - 1;
      quoted++;
      continue;
    }
    out[o++] = c;
  }
  return quoted === 0 ? null : out.subarray(0, o);
}

function matches(src: Uint8Array, at: number, literal: readonly number[]): boolean {
  if (at + literal.length > src.length) return false;
  for (let k = 0; k < literal.length; k++) if (src[at + k] !== literal[k]) return false;
  return true;
}

import { badRequest } from "../http-error.ts";

/**
 * JSON.parse that also takes the NaN / Infinity / -Infinity literals Python's json.dumps writes
 * (tritonclient and KServe's client send them for float tensors). Strict JSON is tried first; only
 * a body that fails and contains one of the literals is rewritten, turning them into strings the
 * float decoders accept and the integer decoders reject with a clear message.
 */
export function parseJsonLenient(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (/NaN|Infinity/.test(text)) {
      try {
        return JSON.parse(quoteNonFinite(text));
      } catch {
        // fall through to the original message, which points at the real problem
      }
    }
    throw badRequest(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

const LITERALS = ["-Infinity", "Infinity", "NaN"] as const;

/** Quotes the non-finite literals that appear outside strings. */
function quoteNonFinite(text: string): string {
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    if (c !== 45 /* - */ && c !== 73 /* I */ && c !== 78 /* N */) continue;
    for (const literal of LITERALS) {
      if (text.startsWith(literal, i)) {
        out += `${text.slice(from, i)}"${literal}"`;
        i += literal.length - 1;
        from = i + 1;
        break;
      }
    }
  }
  return out + text.slice(from);
}

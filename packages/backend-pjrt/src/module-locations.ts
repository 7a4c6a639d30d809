import type { ModuleSource } from "@xlaserve/core";

/**
 * One location alias definition of MLIR's text form: `#loc12 = loc(...)`, alone on its line (the
 * printer emits aliases one per line, and string attributes never hold a raw newline). A line
 * ending is left where it is.
 */
const LOCATION_ALIAS = /^(#loc[\w$.-]*)[ \t]*=[ \t]*(loc\(.*\))[ \t]*(?=\r?$)/gm;

/**
 * The module with every location alias set to `loc(unknown)`.
 *
 * Why: JAX writes each op's Python call stack into these aliases, and XLA keeps them as HLO
 * metadata inside the compiled program. Every load of the program parses that module twice,
 * prints it for a fingerprint and builds profiler annotations from it, so the metadata costs time
 * on every restart; it changes nothing XLA generates. References (`loc(#loc12)`) stay valid
 * because the aliases stay defined.
 *
 * The text is handled as latin1, one character per byte, so every byte outside the rewritten
 * aliases comes back as it was, UTF-8 or not. An alias whose value does not close on its own line
 * (hand-written text) is left alone. Bytecode (portable artifacts) and text without aliases to
 * rewrite come back as the same object.
 */
export function withUnknownLocations(module: ModuleSource): ModuleSource {
  if (module.format !== "text") return module;
  const text = Buffer.from(module.bytes.buffer, module.bytes.byteOffset, module.bytes.byteLength).toString("latin1");
  let changed = false;
  const rewritten = text.replace(LOCATION_ALIAS, (line, alias: string, value: string) => {
    if (value === "loc(unknown)" || !closesOnItsLine(value)) return line;
    changed = true;
    return `${alias} = loc(unknown)`;
  });
  if (!changed) return module;
  return { ...module, bytes: new Uint8Array(Buffer.from(rewritten, "latin1")) };
}

/** Whether `loc(...)` opens and closes its parentheses on this line, string literals skipped. */
function closesOnItsLine(value: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i === value.length - 1;
  }
  return false;
}

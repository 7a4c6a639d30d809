import type { ModuleSource } from "@xlaserve/core";

/**
 * One location alias definition of MLIR's text form: `#loc12 = loc(...)`, always alone on its line
 * (the printer emits aliases one per line, and string attributes never hold a raw newline).
 */
const LOCATION_ALIAS = /^(#loc[\w$.-]*)[ \t]*=[ \t]*loc\(.*\)[ \t]*\r?$/gm;

/**
 * The module with every location alias set to `loc(unknown)`.
 *
 * Why: JAX writes each op's Python call stack into these aliases, and XLA keeps them as HLO
 * metadata and stack frames inside the compiled program. Loading a program parses and fingerprints
 * that module twice, so the metadata costs time on every restart; it changes nothing XLA
 * generates. References (`loc(#loc12)`) stay valid because the aliases stay defined.
 *
 * Bytecode (portable artifacts) and text without aliases come back as the same object.
 */
export function withUnknownLocations(module: ModuleSource): ModuleSource {
  if (module.format !== "text") return module;
  const text = new TextDecoder().decode(module.bytes);
  let changed = false;
  const stripped = text.replace(LOCATION_ALIAS, (line, alias: string) => {
    const replacement = `${alias} = loc(unknown)`;
    if (replacement !== line) changed = true;
    return replacement;
  });
  if (!changed) return module;
  return { ...module, bytes: new TextEncoder().encode(stripped) };
}

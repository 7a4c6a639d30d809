import { type CompileOptions, canonicalCompileOptions } from "@xlaserve/core";
import { sha256Hex } from "./hash.ts";

export const ENTRY_SUFFIX = ".xprog";
const ENTRY_RE = /^([0-9a-f]{64})-([0-9a-f]{16})\.xprog$/;

/**
 * Hash of everything besides the module bytes that the compiled program depends on: the
 * canonical compile options (deterministic flag, device, XLA flags, keepLocations when set) and
 * an optional caller string for anything else (e.g. a compile-time environment the backend does
 * not report).
 */
export function optionsHash(
  options: CompileOptions,
  keyExtra = "",
  env: Record<string, string | undefined> = process.env,
): string {
  // XLA also reads flags from the environment; a program compiled under other XLA_FLAGS may
  // differ, so they join the key whenever they are set (unset leaves the key unchanged).
  const envFlags = env.XLA_FLAGS ? `\nXLA_FLAGS=${env.XLA_FLAGS}` : "";
  return sha256Hex(`${canonicalCompileOptions(options)}\n${keyExtra}${envFlags}`);
}

/** `<module sha256>-<16 hex of the options hash>.xprog` (ARCHITECTURE rule 3). */
export function entryName(moduleSha256: string, optsHash: string): string {
  return `${moduleSha256}-${optsHash.slice(0, 16)}${ENTRY_SUFFIX}`;
}

export function parseEntryName(name: string): { moduleSha256: string; optionsHashPrefix: string } | null {
  const m = ENTRY_RE.exec(name);
  return m ? { moduleSha256: m[1]!, optionsHashPrefix: m[2]! } : null;
}

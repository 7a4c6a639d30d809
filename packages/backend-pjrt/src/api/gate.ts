import { XlaserveError } from "@xlaserve/core";
import { SUPPORTED_MAJOR, VERIFIED_LAYOUTS, type VerifiedLayout } from "../abi/slots.ts";

/** What a plugin says about its table before any slot is called. */
export interface TableFacts {
  readonly major: number;
  readonly minor: number;
  readonly structSize: number;
}

function describeKnown(): string {
  return VERIFIED_LAYOUTS.map((v) => `${v.major}.${v.minor} (${v.structSize} bytes)`).join(", ");
}

/**
 * ARCHITECTURE rule 1: use a plugin only where the major matches and (minor, struct_size) is a
 * pair the bindings were verified against. Returns the layout to use, or throws
 * PLUGIN_VERSION_MISMATCH naming both the plugin's version and the ones the bindings know.
 */
export function gateTable(facts: TableFacts, pluginPath = "<plugin>"): VerifiedLayout {
  const details = { plugin: pluginPath, ...facts, known: VERIFIED_LAYOUTS.map((v) => `${v.major}.${v.minor}`) };
  const pluginVersion = `${facts.major}.${facts.minor} (table ${facts.structSize} bytes)`;
  if (facts.major !== SUPPORTED_MAJOR) {
    throw new XlaserveError(
      "PLUGIN_VERSION_MISMATCH",
      `PJRT plugin speaks API ${pluginVersion}, major ${facts.major}; the bindings speak major ${SUPPORTED_MAJOR} (verified: ${describeKnown()})`,
      details,
    );
  }
  const match = VERIFIED_LAYOUTS.find(
    (v) => v.major === facts.major && v.minor === facts.minor && v.structSize === facts.structSize,
  );
  if (!match) {
    throw new XlaserveError(
      "PLUGIN_VERSION_MISMATCH",
      `PJRT plugin reports API ${pluginVersion}, a layout the bindings were not verified against (verified: ${describeKnown()})`,
      details,
    );
  }
  return match;
}

import type { BackendIdentity } from "@xlaserve/core";
import { type EntryHeader, decodeEntry } from "./entry-format.ts";
import { identityDiff, identityEquals } from "./partition.ts";
import type { CacheWarningKind } from "./warnings.ts";

export interface Expected {
  readonly identity: BackendIdentity;
  readonly partition: string;
  readonly sourceHash: string;
  readonly optionsHash: string;
}

export type CheckResult =
  | { readonly ok: true; readonly header: EntryHeader; readonly payload: Uint8Array }
  | { readonly ok: false; readonly kind: CacheWarningKind; readonly reason: string; readonly detail: string };

/**
 * Decides whether stored bytes are the program asked for: intact (header and payload
 * checksums), of this format version, written under this exact backend identity (rule 2), and
 * for this module source and these options (rule 3).
 */
export function checkEntry(bytes: Uint8Array, expected: Expected): CheckResult {
  const decoded = decodeEntry(bytes);
  if (!decoded.ok) {
    const kind = decoded.reason === "wrong-format-version" ? "wrong-format" : "corrupt-entry";
    return { ok: false, kind, reason: decoded.reason, detail: decoded.detail };
  }
  const { facts } = decoded.header;
  if (!identityEquals(facts.identity, expected.identity) || facts.partition !== expected.partition) {
    const diff = identityDiff(expected.identity, facts.identity);
    return {
      ok: false,
      kind: "foreign-entry",
      reason: "foreign-partition",
      detail: `written for another backend identity (${diff.join("; ") || `partition ${facts.partition}`})`,
    };
  }
  if (decoded.header.sourceHash !== expected.sourceHash || decoded.header.optionsHash !== expected.optionsHash) {
    return {
      ok: false,
      kind: "corrupt-entry",
      reason: "key-mismatch",
      detail: "entry holds another module or options",
    };
  }
  return decoded;
}

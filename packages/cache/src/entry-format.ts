import type { BackendIdentity } from "@xlaserve/core";
import { bytesEqual, sha256, sha256Hex, toHex } from "./hash.ts";
import { IDENTITY_FIELDS, canonicalIdentity } from "./partition.ts";

/**
 * The on-disk layout of one cache entry. All integers little-endian.
 *
 *   0   8   magic "XLSPROG\0"
 *   8   4   format version (u32)
 *   12  4   facts length L (u32)
 *   16  L   facts: UTF-8 JSON {identity, partition, moduleFile, compileMs, createdAt}
 *   +0  32  source hash (sha256 of the module bytes)
 *   +32 32  options hash (sha256 of the canonical compile options)
 *   +64 8   payload length (u64)
 *   +72 32  payload checksum (sha256)
 *   +104 32 header checksum (sha256 of every byte above)
 *   then the payload: the bytes of backend.serialize.
 *
 * The header checksum makes every header byte count: without it a flipped byte inside a JSON
 * string or in the padding of a length could go unnoticed.
 */
export const ENTRY_MAGIC = new TextEncoder().encode("XLSPROG\0");
export const ENTRY_FORMAT_VERSION = 1;
const FIXED_PREFIX = 16;
const FIXED_SUFFIX = 32 + 32 + 8 + 32 + 32;
/** Facts JSON larger than this is a corrupt length field, not a real header. */
const MAX_FACTS = 64 * 1024;

export interface EntryFacts {
  readonly identity: BackendIdentity;
  readonly partition: string;
  readonly moduleFile: string | null;
  readonly compileMs: number | null;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
}

export interface EntryHeader {
  readonly formatVersion: number;
  readonly facts: EntryFacts;
  /** Hex. */
  readonly sourceHash: string;
  /** Hex. */
  readonly optionsHash: string;
  readonly payloadLength: number;
  readonly headerLength: number;
  /** Hex sha256 of the payload, as recorded. */
  readonly payloadChecksum: string;
}

export type DecodeFailure =
  | "truncated"
  | "bad-magic"
  | "wrong-format-version"
  | "header-checksum"
  | "bad-facts"
  | "length-mismatch"
  | "payload-checksum";

export type DecodeResult =
  | { readonly ok: true; readonly header: EntryHeader; readonly payload: Uint8Array }
  | { readonly ok: false; readonly reason: DecodeFailure; readonly detail: string };

function hexToBytes(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, "hex"));
}

export function encodeEntry(
  facts: EntryFacts,
  sourceHash: string,
  optionsHash: string,
  payload: Uint8Array,
  formatVersion = ENTRY_FORMAT_VERSION,
): Uint8Array {
  const factsBytes = new TextEncoder().encode(
    JSON.stringify({ ...facts, identity: canonicalIdentity(facts.identity) }),
  );
  const headerLength = FIXED_PREFIX + factsBytes.length + FIXED_SUFFIX;
  const out = new Uint8Array(headerLength + payload.length);
  const view = new DataView(out.buffer);
  out.set(ENTRY_MAGIC, 0);
  view.setUint32(8, formatVersion, true);
  view.setUint32(12, factsBytes.length, true);
  out.set(factsBytes, FIXED_PREFIX);
  let at = FIXED_PREFIX + factsBytes.length;
  out.set(hexToBytes(sourceHash), at);
  out.set(hexToBytes(optionsHash), at + 32);
  view.setBigUint64(at + 64, BigInt(payload.length), true);
  out.set(sha256(payload), at + 72);
  at += 104;
  out.set(sha256(out.subarray(0, at)), at);
  out.set(payload, headerLength);
  return out;
}

function parseFacts(bytes: Uint8Array): EntryFacts | string {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    return `facts are not JSON: ${(e as Error).message}`;
  }
  if (typeof raw !== "object" || raw === null) return "facts are not an object";
  const f = raw as Record<string, unknown>;
  const identity = f.identity as Record<string, unknown> | undefined;
  if (typeof identity !== "object" || identity === null) return "facts have no identity";
  for (const field of IDENTITY_FIELDS) {
    if (typeof identity[field] !== "string") return `identity.${field} is missing`;
  }
  if (typeof f.partition !== "string") return "facts have no partition";
  if (typeof f.createdAt !== "number") return "facts have no createdAt";
  return {
    identity: canonicalIdentity(identity as unknown as BackendIdentity),
    partition: f.partition,
    moduleFile: typeof f.moduleFile === "string" ? f.moduleFile : null,
    compileMs: typeof f.compileMs === "number" ? f.compileMs : null,
    createdAt: f.createdAt,
  };
}

/**
 * Reads and checks a header from the file's first bytes (`bytes` may stop anywhere after the
 * header; `fileLength` is the whole file's size). Everything but the payload checksum.
 */
export function decodeHeader(
  bytes: Uint8Array,
  fileLength: number,
):
  | { readonly ok: true; readonly header: EntryHeader }
  | { readonly ok: false; readonly reason: DecodeFailure; readonly detail: string } {
  const fail = (reason: DecodeFailure, detail: string) => ({ ok: false as const, reason, detail });
  if (bytes.length < FIXED_PREFIX) return fail("truncated", `${bytes.length} bytes is shorter than the fixed header`);
  if (!bytesEqual(bytes.subarray(0, 8), ENTRY_MAGIC)) return fail("bad-magic", "not an xlaserve cache entry");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const factsLength = view.getUint32(12, true);
  if (factsLength > MAX_FACTS) return fail("header-checksum", `facts length ${factsLength} is implausible`);
  const headerLength = FIXED_PREFIX + factsLength + FIXED_SUFFIX;
  if (bytes.length < headerLength) return fail("truncated", `${bytes.length} bytes, header needs ${headerLength}`);
  const checked = headerLength - 32;
  if (!bytesEqual(sha256(bytes.subarray(0, checked)), bytes.subarray(checked, headerLength))) {
    return fail("header-checksum", "header checksum mismatch");
  }
  // The version is checked after the header checksum so a flipped bit reads as corruption and
  // only a genuine entry of another format version reads as one.
  const formatVersion = view.getUint32(8, true);
  if (formatVersion !== ENTRY_FORMAT_VERSION) {
    return fail("wrong-format-version", `format version ${formatVersion}, this build reads ${ENTRY_FORMAT_VERSION}`);
  }
  const facts = parseFacts(bytes.subarray(FIXED_PREFIX, FIXED_PREFIX + factsLength));
  if (typeof facts === "string") return fail("bad-facts", facts);
  const at = FIXED_PREFIX + factsLength;
  const payloadLength = Number(view.getBigUint64(at + 64, true));
  if (fileLength - headerLength !== payloadLength) {
    const reason = fileLength - headerLength < payloadLength ? "truncated" : "length-mismatch";
    return fail(reason, `payload is ${fileLength - headerLength} bytes, header says ${payloadLength}`);
  }
  return {
    ok: true,
    header: {
      formatVersion,
      facts,
      sourceHash: toHex(bytes.subarray(at, at + 32)),
      optionsHash: toHex(bytes.subarray(at + 32, at + 64)),
      payloadLength,
      headerLength,
      payloadChecksum: toHex(bytes.subarray(at + 72, at + 104)),
    },
  };
}

/** Bytes enough to hold any valid header. */
export const MAX_HEADER_BYTES = FIXED_PREFIX + MAX_FACTS + FIXED_SUFFIX;

/**
 * Reads and checks a whole entry. Never throws on bad bytes: every failure is a reason the
 * caller reports before removing the file.
 */
export function decodeEntry(bytes: Uint8Array): DecodeResult {
  const decoded = decodeHeader(bytes, bytes.length);
  if (!decoded.ok) return decoded;
  const payload = bytes.subarray(decoded.header.headerLength);
  if (sha256Hex(payload) !== decoded.header.payloadChecksum) {
    return { ok: false, reason: "payload-checksum", detail: "payload checksum mismatch" };
  }
  return { ok: true, header: decoded.header, payload };
}

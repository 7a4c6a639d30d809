import type { BackendIdentity } from "@xlaserve/core";
import { sha256Hex } from "./hash.ts";

/**
 * The identity fields in a fixed order. The partition hash and the entry header both use this
 * order, so an identity read back from a header compares field by field with the live one.
 */
export const IDENTITY_FIELDS = [
  "backend",
  "platform",
  "buildId",
  "runtimeVersion",
  "deviceKind",
  "computeCapability",
] as const satisfies readonly (keyof BackendIdentity)[];

/** A plain, key-ordered copy (drops anything a backend may have added to its identity object). */
export function canonicalIdentity(identity: BackendIdentity): BackendIdentity {
  const out: Record<string, string> = {};
  for (const field of IDENTITY_FIELDS) out[field] = String(identity[field]);
  return out as unknown as BackendIdentity;
}

export function identityEquals(a: BackendIdentity, b: BackendIdentity): boolean {
  return IDENTITY_FIELDS.every((f) => a[f] === b[f]);
}

/** The fields that differ, for warnings ("buildId: a -> b"). */
export function identityDiff(expected: BackendIdentity, found: BackendIdentity): string[] {
  return IDENTITY_FIELDS.filter((f) => expected[f] !== found[f]).map(
    (f) => `${f}: ${JSON.stringify(found[f])} (expected ${JSON.stringify(expected[f])})`,
  );
}

/** Lowercase, filesystem-safe, bounded: the readable part of a partition name. */
function slug(value: string, max = 32): string {
  const s = value
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, "_")
    .replace(/^[_.]+|[_.]+$/g, "");
  return (s || "none").slice(0, max);
}

function runtimeSlug(identity: BackendIdentity): string {
  const r = slug(identity.runtimeVersion, 16);
  // A bare version ("12.8") reads better with its platform in front ("cuda12.8").
  return /^[0-9]/.test(r) ? `${slug(identity.platform, 8)}${r}` : r;
}

function capabilitySlug(identity: BackendIdentity): string {
  const cc = identity.computeCapability;
  if (!/^[0-9]+(\.[0-9]+)?$/.test(cc)) return slug(cc, 12);
  const digits = cc.replace(".", "");
  return identity.platform === "cuda" ? `sm${digits}` : `cc${digits}`;
}

/**
 * The partition directory name (ARCHITECTURE rule 2): readable facts first, then 8 hex digits
 * of a hash over every field, so identities whose readable parts collide after slugging or
 * truncation (a long XLA build id) still land in different directories. Stable: the same
 * identity gives the same name in every process and release.
 */
export function partitionName(identity: BackendIdentity): string {
  const id = canonicalIdentity(identity);
  const digest = sha256Hex(JSON.stringify(IDENTITY_FIELDS.map((f) => id[f]))).slice(0, 8);
  return [
    slug(id.backend, 12),
    slug(id.platform, 12),
    slug(id.buildId),
    runtimeSlug(id),
    slug(id.deviceKind, 24),
    capabilitySlug(id),
    digest,
  ].join("-");
}

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { BackendIdentity } from "@xlaserve/core";
import type { PjrtDevice } from "./runtime/client.ts";

const fileHashes = new Map<string, string>();

/** The first 16 hex digits of the plugin file's SHA-256 (two builds with one xla_version differ here). */
export function pluginFileHash(path: string): string {
  let hash = fileHashes.get(path);
  if (!hash) {
    hash = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
    fileHashes.set(path, hash);
  }
  return hash;
}

/** "cuda", "rocm", "tpu", "cpu": the platform name PJRT reports, lower-cased. */
/**
 * Supplies a plugin file's hash known from an earlier start (the worker remembers it per file
 * identity), so the identity need not read the whole plugin again.
 */
export function rememberPluginFileHash(path: string, hash: string): void {
  fileHashes.set(path, hash);
}

export function platformOf(platformName: string): string {
  const name = platformName.toLowerCase();
  if (name === "gpu" || name.includes("cuda")) return "cuda";
  return name;
}

/** The CUDA (or other) runtime version from the client's platform version text. */
export function runtimeVersionOf(platformVersion: string): string {
  const trimmed = platformVersion.trim();
  return trimmed === "" ? "none" : trimmed;
}

/** Compute capability as "major.minor" from the device attributes, or "none". */
export function computeCapabilityOf(device: PjrtDevice): string {
  const value = device.attributes.compute_capability;
  if (value === undefined) return "none";
  return Array.isArray(value) ? value.join(".") : String(value);
}

/** Everything the cache partitions by (ARCHITECTURE rule 2). */
export function pjrtIdentity(input: {
  pluginPath: string;
  xlaVersion: string;
  platformName: string;
  platformVersion: string;
  device: PjrtDevice;
}): BackendIdentity {
  return {
    backend: "pjrt",
    platform: platformOf(input.platformName),
    buildId: `${input.xlaVersion}+${pluginFileHash(input.pluginPath)}`,
    runtimeVersion: runtimeVersionOf(input.platformVersion),
    deviceKind: input.device.kind,
    computeCapability: computeCapabilityOf(input.device),
  };
}

import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { MODEL_JL_FILE, WEIGHTS_FILE } from "./load.ts";
import { MANIFEST_FILE } from "./manifest.ts";

/**
 * What the repository watcher compares to decide a bundle changed: size and mtime of the files a
 * user edits, and nothing else. The worker's own writes under .cache/ must never look like a
 * change (ARCHITECTURE rule 4), so that directory is not even listed.
 */
export interface BundleFingerprint {
  readonly files: readonly FingerprintEntry[];
  /** Canonical string of `files`: equal keys mean an unchanged bundle. */
  readonly key: string;
}

export interface FingerprintEntry {
  readonly file: string;
  readonly size: number;
  /** Modification time in nanoseconds since the epoch (a decimal string: exceeds 2^53). */
  readonly mtimeNs: string;
}

const MODULE_FILE = /^model.*\.mlir$/;

export function bundleFingerprint(dir: string): BundleFingerprint {
  const root = resolve(dir);
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return { files: [], key: "" };
  }
  const wanted = entries.filter(
    (f) => f === MANIFEST_FILE || f === WEIGHTS_FILE || f === MODEL_JL_FILE || MODULE_FILE.test(f),
  );
  const files: FingerprintEntry[] = [];
  for (const file of wanted.sort()) {
    const stat = statSync(join(root, file), { bigint: true, throwIfNoEntry: false });
    if (!stat?.isFile()) continue; // vanished between listing and stat, or not a file
    files.push({ file, size: Number(stat.size), mtimeNs: stat.mtimeNs.toString() });
  }
  return { files, key: files.map((f) => `${f.file}:${f.size}:${f.mtimeNs}`).join("|") };
}

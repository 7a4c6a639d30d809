import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TEMP_PREFIX } from "./atomic-write.ts";
import { ENTRY_SUFFIX } from "./entry-key.ts";

/** `<bundle>/.cache`: written by the worker only, never watched (ARCHITECTURE rule 4). */
export const CACHE_DIR = ".cache";
export const MODULE_HASHES_FILE = "mlir_hashes.json";
export const LOCK_SUFFIX = ".lock";

export function cacheDir(bundleDir: string): string {
  return join(bundleDir, CACHE_DIR);
}

export function partitionDir(bundleDir: string, partition: string): string {
  return join(bundleDir, CACHE_DIR, partition);
}

export function entryPath(bundleDir: string, partition: string, entry: string): string {
  return join(bundleDir, CACHE_DIR, partition, entry);
}

export interface EntryFile {
  readonly path: string;
  readonly partition: string;
  readonly entry: string;
  readonly sizeBytes: number;
  readonly mtimeMs: number;
}

function readdirOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Partition directory names under a bundle's `.cache/`. */
export function listPartitions(bundleDir: string): string[] {
  const root = cacheDir(bundleDir);
  return readdirOrEmpty(root).filter((name) => {
    try {
      return statSync(join(root, name)).isDirectory();
    } catch {
      return false;
    }
  });
}

/** Every entry file in every partition of a bundle (temp and lock files excluded). */
export function listEntryFiles(bundleDir: string): EntryFile[] {
  const out: EntryFile[] = [];
  for (const partition of listPartitions(bundleDir)) {
    const dir = partitionDir(bundleDir, partition);
    for (const entry of readdirOrEmpty(dir)) {
      if (!entry.endsWith(ENTRY_SUFFIX) || entry.startsWith(TEMP_PREFIX)) continue;
      const path = join(dir, entry);
      try {
        const st = statSync(path);
        if (st.isFile()) out.push({ path, partition, entry, sizeBytes: st.size, mtimeMs: st.mtimeMs });
      } catch {
        /* removed while we looked */
      }
    }
  }
  return out;
}

/** Compile lock files (`<entry>.lock`) in every partition of a bundle. */
export function listLockFiles(bundleDir: string): string[] {
  const out: string[] = [];
  for (const partition of listPartitions(bundleDir)) {
    const dir = partitionDir(bundleDir, partition);
    for (const name of readdirOrEmpty(dir)) if (name.endsWith(LOCK_SUFFIX)) out.push(join(dir, name));
  }
  return out;
}

/**
 * Leftovers of writers that died mid-write (entry temp files, a lock's temp or set-aside copy),
 * older than `olderThanMs`.
 */
export function listStaleTempFiles(bundleDir: string, olderThanMs: number, now = Date.now()): string[] {
  const out: string[] = [];
  for (const partition of listPartitions(bundleDir)) {
    const dir = partitionDir(bundleDir, partition);
    for (const name of readdirOrEmpty(dir)) {
      if (!name.startsWith(TEMP_PREFIX) && !name.includes(`${LOCK_SUFFIX}.`)) continue;
      try {
        if (now - statSync(join(dir, name)).mtimeMs > olderThanMs) out.push(join(dir, name));
      } catch {
        /* gone */
      }
    }
  }
  return out;
}

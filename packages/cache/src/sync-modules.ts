import { rmSync } from "node:fs";
import { parseEntryName } from "./entry-key.ts";
import type { IndexStore } from "./index-store.ts";
import { listEntryFiles } from "./layout.ts";
import { type HashChanges, diffModuleHashes, readModuleHashes, writeModuleHashes } from "./module-hashes.ts";
import type { BundleWithModules } from "./types.ts";
import type { WarningSink } from "./warnings.ts";

export interface SyncResult extends HashChanges {
  /** State of mlir_hashes.json before the sync. */
  readonly hashesFile: "ok" | "missing" | "invalid";
  /** Entry files removed, in every partition. */
  readonly droppedEntries: readonly string[];
}

/**
 * ARCHITECTURE rule 3 on bundle load: compares every module's hash with mlir_hashes.json,
 * drops the entries of changed or removed modules in every partition, and rewrites the file.
 * Entries are named by source hash, so "an entry whose source is no current module" is exactly
 * the set to drop; deciding by that (not only by the recorded diff) also cleans up after a lost
 * or damaged mlir_hashes.json. A weights-only update changes no module hash and drops nothing.
 */
export function syncModuleHashes(store: IndexStore, bundle: BundleWithModules, onWarning: WarningSink): SyncResult {
  const current: Record<string, string> = {};
  for (const m of bundle.modules) current[m.file] = m.sha256;
  const previous = readModuleHashes(bundle.dir);
  if (previous.state === "invalid") {
    onWarning({
      kind: "hashes-file-invalid",
      code: "CACHE_CORRUPT",
      message: `${bundle.name}/.cache/mlir_hashes.json is invalid (${previous.detail}); rebuilding it`,
      bundle: bundle.name,
      reason: previous.detail,
    });
  }
  const changes = diffModuleHashes(previous.state === "ok" ? previous.hashes : {}, current);
  const live = new Set(Object.values(current));
  const dropped: string[] = [];
  for (const file of listEntryFiles(bundle.dir)) {
    const sha = parseEntryName(file.entry)?.moduleSha256;
    if (sha !== undefined && live.has(sha)) continue;
    try {
      rmSync(file.path, { force: true });
    } catch {
      continue; // read-only: the entry stays, unused, since no module has its hash
    }
    store.remove(file.path);
    dropped.push(file.path);
  }
  if (changes.changed.length + changes.removed.length > 0) {
    onWarning({
      kind: "module-changed",
      code: "CACHE_CORRUPT",
      message: `${bundle.name}: modules changed (${[...changes.changed, ...changes.removed].join(", ")}); dropped ${dropped.length} compiled programs`,
      bundle: bundle.name,
    });
  }
  if (previous.state !== "ok" || changes.changed.length + changes.added.length + changes.removed.length > 0) {
    try {
      writeModuleHashes(bundle.dir, current);
    } catch (e) {
      onWarning({
        kind: "write-failed",
        code: "CACHE_CORRUPT",
        message: `cannot write ${bundle.name}/.cache/mlir_hashes.json (${(e as Error).message})`,
        bundle: bundle.name,
      });
    }
  }
  return { ...changes, hashesFile: previous.state, droppedEntries: dropped };
}

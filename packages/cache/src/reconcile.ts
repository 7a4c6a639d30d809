import { rmSync } from "node:fs";
import { parseEntryName } from "./entry-key.ts";
import { readEntryHeader } from "./entry-io.ts";
import type { BundleRef, IndexStore } from "./index-store.ts";
import { listEntryFiles, listLockFiles, listStaleTempFiles } from "./layout.ts";
import { takeOverIfStale } from "./lock.ts";
import { readModuleHashes } from "./module-hashes.ts";
import type { WarningSink } from "./warnings.ts";

export interface ReconcileReport {
  /** Rows created for entry files the index did not know. */
  readonly added: number;
  /** Rows dropped because their file is gone. */
  readonly removed: number;
  /** Rows whose size disagreed with the file and were re-read. */
  readonly updated: number;
  /** Files removed because their header is unreadable. */
  readonly badFiles: number;
}

/** module sha256 -> file name, from mlir_hashes.json, for rows rebuilt from files. */
function moduleFilesBySha(bundleDir: string): Map<string, string> {
  const read = readModuleHashes(bundleDir);
  const out = new Map<string, string>();
  if (read.state === "ok") for (const [file, sha] of Object.entries(read.hashes)) out.set(sha, file);
  return out;
}

/**
 * Makes the index agree with the entry files of one bundle (the files are the truth): a file
 * without a row gets a row from its header, a row without a file is dropped, a row whose size
 * disagrees is re-read. Reads headers only; `verify` is what checks payloads.
 */
export function reconcileBundle(
  store: IndexStore,
  bundle: BundleRef,
  onWarning: WarningSink,
  tempMaxAgeMs: number,
): ReconcileReport {
  for (const tmp of listStaleTempFiles(bundle.dir, tempMaxAgeMs)) rmSync(tmp, { force: true });
  // Compile locks of crashed workers: removed the same way a waiter would take them over.
  for (const lock of listLockFiles(bundle.dir)) takeOverIfStale(lock, { staleMs: tempMaxAgeMs });
  const files = listEntryFiles(bundle.dir);
  const rows = new Map(store.rowsOf(bundle.dir).map((r) => [r.path, r]));
  const bySha = moduleFilesBySha(bundle.dir);
  let added = 0;
  let updated = 0;
  let badFiles = 0;
  store.transaction(() => {
    for (const file of files) {
      const row = rows.get(file.path);
      rows.delete(file.path);
      if (row && row.sizeBytes === file.sizeBytes) continue;
      const read = readEntryHeader(file.path);
      const named = parseEntryName(file.entry);
      if (!read.ok || !named || named.moduleSha256 !== read.header.sourceHash) {
        const detail = read.ok ? "entry name does not match its header" : read.detail;
        onWarning({
          kind: "corrupt-entry",
          code: "CACHE_CORRUPT",
          message: `removed unreadable cache entry ${file.path}: ${detail}`,
          path: file.path,
          reason: read.ok ? "name-mismatch" : read.reason,
          bundle: bundle.name,
        });
        rmSync(file.path, { force: true });
        if (row) store.remove(file.path);
        badFiles++;
        continue;
      }
      const h = read.header;
      store.upsert({
        path: file.path,
        bundleDir: bundle.dir,
        bundle: bundle.name,
        partition: file.partition,
        entry: file.entry,
        moduleFile: bySha.get(h.sourceHash) ?? h.facts.moduleFile,
        moduleSha256: h.sourceHash,
        optionsHash: h.optionsHash,
        sizeBytes: read.size,
        compileMs: h.facts.compileMs,
        loadMs: row?.loadMs ?? null,
        createdAt: h.facts.createdAt,
        lastHitAt: row?.lastHitAt ?? null,
        hitCount: row?.hitCount ?? 0,
      });
      if (row) updated++;
      else added++;
    }
    for (const path of rows.keys()) store.remove(path);
  });
  const report = { added, removed: rows.size, updated, badFiles };
  if (added + rows.size + updated > 0) {
    onWarning({
      kind: "index-repaired",
      code: "CACHE_CORRUPT",
      message: `cache index for ${bundle.name} disagreed with its files and was rebuilt: ${added} added, ${rows.size} removed, ${updated} updated`,
      bundle: bundle.name,
    });
  }
  return report;
}

import { basename } from "node:path";
import { decodeEntry } from "./entry-format.ts";
import { entryName } from "./entry-key.ts";
import { readEntryFile, removeIfSame } from "./entry-io.ts";
import type { BundleRef, IndexStore } from "./index-store.ts";
import { listEntryFiles } from "./layout.ts";
import { partitionName } from "./partition.ts";
import type { WarningSink } from "./warnings.ts";

export interface VerifyProblem {
  readonly path: string;
  readonly bundle: string;
  readonly reason: string;
  readonly detail: string;
}

export interface VerifyReport {
  readonly checked: number;
  readonly ok: number;
  readonly bytes: number;
  readonly removed: readonly VerifyProblem[];
}

/**
 * Reads every entry of the given bundles in full and removes any that is not self-consistent:
 * checksums, format version, a partition directory that is the name of the header's identity,
 * an entry name that is the header's source and options hashes. Without a live backend it
 * cannot say whether an entry fits *this* device; getOrCompile checks that on every load.
 */
export function verifyBundles(store: IndexStore, bundles: readonly BundleRef[], onWarning: WarningSink): VerifyReport {
  let checked = 0;
  let bytes = 0;
  const removed: VerifyProblem[] = [];
  for (const bundle of bundles) {
    for (const file of listEntryFiles(bundle.dir)) {
      const read = readEntryFile(file.path);
      if (!read) continue; // removed since the listing
      checked++;
      const decoded = decodeEntry(read.bytes);
      let problem: { reason: string; detail: string } | null = null;
      if (!decoded.ok) problem = decoded;
      else {
        const { header } = decoded;
        const expectedPartition = partitionName(header.facts.identity);
        if (file.partition !== expectedPartition || header.facts.partition !== expectedPartition) {
          problem = { reason: "foreign-partition", detail: `header identity belongs in ${expectedPartition}` };
        } else if (basename(file.path) !== entryName(header.sourceHash, header.optionsHash)) {
          problem = { reason: "key-mismatch", detail: "entry name does not match its header" };
        }
      }
      if (!problem) {
        bytes += read.bytes.length;
        continue;
      }
      removeIfSame(file.path, read.ino);
      store.remove(file.path);
      removed.push({ path: file.path, bundle: bundle.name, ...problem });
      onWarning({
        kind: problem.reason === "foreign-partition" ? "foreign-entry" : "corrupt-entry",
        code: problem.reason === "foreign-partition" ? "CACHE_PARTITION_MISMATCH" : "CACHE_CORRUPT",
        message: `removed cache entry ${file.path}: ${problem.detail}`,
        path: file.path,
        reason: problem.reason,
        bundle: bundle.name,
      });
    }
  }
  return { checked, ok: checked - removed.length, bytes, removed };
}

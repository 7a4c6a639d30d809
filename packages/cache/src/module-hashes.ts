import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "./atomic-write.ts";
import { cacheDir, MODULE_HASHES_FILE } from "./layout.ts";

/** `.cache/mlir_hashes.json`: module file name -> sha256 of its bytes (ARCHITECTURE rule 3). */
export type ModuleHashes = Record<string, string>;

export function moduleHashesPath(bundleDir: string): string {
  return join(cacheDir(bundleDir), MODULE_HASHES_FILE);
}

export type ReadHashesResult =
  | { readonly state: "ok"; readonly hashes: ModuleHashes }
  | { readonly state: "missing" }
  | { readonly state: "invalid"; readonly detail: string };

export function readModuleHashes(bundleDir: string): ReadHashesResult {
  let text: string;
  try {
    text = readFileSync(moduleHashesPath(bundleDir), "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { state: "missing" };
    return { state: "invalid", detail: (e as Error).message };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { state: "invalid", detail: `not JSON: ${(e as Error).message}` };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return { state: "invalid", detail: "not an object" };
  const hashes: ModuleHashes = {};
  for (const [file, sha] of Object.entries(raw)) {
    if (typeof sha !== "string" || !/^[0-9a-f]{64}$/.test(sha)) {
      return { state: "invalid", detail: `${file}: not a sha256` };
    }
    hashes[file] = sha;
  }
  return { state: "ok", hashes };
}

export function writeModuleHashes(bundleDir: string, hashes: ModuleHashes): void {
  mkdirSync(cacheDir(bundleDir), { recursive: true });
  const sorted = Object.fromEntries(
    Object.keys(hashes)
      .sort()
      .map((k) => [k, hashes[k]]),
  );
  writeFileAtomic(moduleHashesPath(bundleDir), `${JSON.stringify(sorted, null, 2)}\n`);
}

export interface HashChanges {
  /** Files whose hash differs from the recorded one. */
  readonly changed: string[];
  readonly added: string[];
  readonly removed: string[];
}

export function diffModuleHashes(previous: ModuleHashes, current: ModuleHashes): HashChanges {
  const changed: string[] = [];
  const added: string[] = [];
  for (const [file, sha] of Object.entries(current)) {
    if (!(file in previous)) added.push(file);
    else if (previous[file] !== sha) changed.push(file);
  }
  const removed = Object.keys(previous).filter((f) => !(f in current));
  return { changed, added, removed };
}

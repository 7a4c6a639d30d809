import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { VerifiedFiles } from "@xlaserve/core";

/** Files remembered at most: a repository's weights, a few versions each. */
const MAX_KEYS = 1024;

/**
 * The weights files that matched their manifest's weights_sha256, by device, inode, size and
 * modification time, kept in the state directory so that a restart does not hash unchanged
 * weights again (ResNet-50's 100 MB cost 200 ms of sha256 on the 2-core development VM). A file
 * written since has another mtime, so it is hashed again. An unwritable state directory only
 * costs the next start the hashing.
 */
export class VerifiedWeightsMemo implements VerifiedFiles {
  private readonly file: string;
  private keys: string[] | null = null;

  constructor(private readonly stateDir: string) {
    this.file = join(stateDir, "verified-weights.json");
  }

  has(key: string): boolean {
    return this.load().includes(key);
  }

  add(key: string): void {
    const keys = this.load().filter((k) => k !== key);
    keys.push(key);
    this.keys = keys.slice(-MAX_KEYS);
    try {
      mkdirSync(this.stateDir, { recursive: true });
      // Atomic replace: several workers may share the state directory.
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(this.keys)}\n`);
      renameSync(tmp, this.file);
    } catch {
      // remembered for this process only
    }
  }

  private load(): string[] {
    if (this.keys) return this.keys;
    try {
      const raw = JSON.parse(readFileSync(this.file, "utf8")) as unknown;
      this.keys = Array.isArray(raw) ? raw.filter((k): k is string => typeof k === "string") : [];
    } catch {
      this.keys = [];
    }
    return this.keys;
  }
}

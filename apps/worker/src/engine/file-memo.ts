import { mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Facts about a file remembered across starts in the worker's state directory, valid while the
 * file is unchanged: same real path, size, modification time and inode (a reinstall writes a new
 * file) and the same `salt` (whatever else the fact depends on). For facts that are slow to get
 * on every start, such as a PJRT plugin's probe verdict or the hash of its several hundred MB.
 */
export class FileMemo<T> {
  private readonly file: string;

  constructor(
    private readonly stateDir: string,
    name: string,
  ) {
    this.file = join(stateDir, name);
  }

  get(path: string, salt: string): T | undefined {
    const key = fileKey(path, salt);
    const memo = key ? this.read()[path] : undefined;
    return memo && memo.key === key ? memo.value : undefined;
  }

  set(path: string, salt: string, value: T): void {
    const key = fileKey(path, salt);
    if (!key) return;
    try {
      mkdirSync(this.stateDir, { recursive: true });
      // Atomic replace: several workers may share the state directory.
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify({ ...this.read(), [path]: { key, value } }, null, 2)}\n`);
      renameSync(tmp, this.file);
    } catch {
      // an unwritable state directory only costs the next start the slow way
    }
  }

  private read(): Record<string, { key: string; value: T }> {
    try {
      const raw = JSON.parse(readFileSync(this.file, "utf8")) as unknown;
      return raw && typeof raw === "object" && !Array.isArray(raw)
        ? (raw as Record<string, { key: string; value: T }>)
        : {};
    } catch {
      return {};
    }
  }
}

function fileKey(path: string, salt: string): string | null {
  try {
    const real = realpathSync(path);
    const s = statSync(real, { bigint: true });
    return `${real}|${s.size}|${s.mtimeNs}|${s.ino}|${salt}`;
  } catch {
    return null;
  }
}

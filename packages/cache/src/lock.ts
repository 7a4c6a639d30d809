import { linkSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";

/**
 * A cross-process lock: a file created atomically with its owner's facts. Several workers
 * sharing one model repository use it so only one of them compiles a given entry.
 *
 * Creation is write-temp-then-link: link(2) fails if the target exists and never exposes a
 * half-written file, so a reader always sees complete owner facts. The owner refreshes the
 * file's mtime while it holds the lock; a lock whose owner process is gone (same host) or whose
 * mtime is older than `staleMs` is taken over.
 */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
  readonly createdAt: number;
}

export interface LockOptions {
  /** A lock not refreshed for this long is abandoned. */
  readonly staleMs: number;
  /** Called when a stale lock is taken over. */
  readonly onStale?: (path: string, owner: LockOwner | null, why: string) => void;
}

export interface HeldLock {
  readonly path: string;
  release(): void;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOwner(path: string): LockOwner | null {
  try {
    const raw = JSON.parse(readFileSync(path, "utf8")) as Partial<LockOwner>;
    if (typeof raw.pid !== "number" || typeof raw.token !== "string" || typeof raw.host !== "string") return null;
    return raw as LockOwner;
  } catch {
    return null;
  }
}

/** Tries once; returns the held lock or null when another owner holds it. */
export function tryLock(path: string, opts: LockOptions): HeldLock | null {
  const owner: LockOwner = { pid: process.pid, host: hostname(), token: crypto.randomUUID(), createdAt: Date.now() };
  const tmp = `${path}.${owner.token}`;
  writeFileSync(tmp, JSON.stringify(owner));
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    takeOverIfStale(path, opts);
    return null;
  } finally {
    rmSync(tmp, { force: true });
  }
  // Heartbeat: keeps a long compile's lock from looking abandoned. unref so it never keeps
  // the process alive on its own.
  const beat = setInterval(
    () => {
      const now = new Date();
      try {
        utimesSync(path, now, now);
      } catch {
        /* taken over or removed: release() below will notice nothing to remove */
      }
    },
    Math.max(50, Math.floor(opts.staleMs / 4)),
  );
  beat.unref?.();
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      clearInterval(beat);
      // Remove only our own lock: if it was taken over, the file is someone else's now.
      if (readOwner(path)?.token === owner.token) rmSync(path, { force: true });
    },
  };
}

/**
 * Removes the lock at `path` if its owner is dead or it is older than staleMs. Safe against two
 * waiters judging the same lock stale: the lock is renamed away (only one rename wins), and if
 * what was renamed turns out to be a fresh lock (someone took over in between), it is linked
 * back.
 */
export function takeOverIfStale(path: string, opts: LockOptions): boolean {
  let mtimeMs: number;
  try {
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    return false; // gone: the next try may succeed
  }
  const owner = readOwner(path);
  const age = Date.now() - mtimeMs;
  let why: string | null = null;
  if (owner && owner.host === hostname() && !pidAlive(owner.pid)) why = `owner pid ${owner.pid} is not running`;
  else if (age > opts.staleMs) why = `lock not refreshed for ${Math.round(age)} ms`;
  if (!why) return false;
  const aside = `${path}.stale-${crypto.randomUUID()}`;
  try {
    renameSync(path, aside);
  } catch {
    return false; // another waiter took it first
  }
  const moved = readOwner(aside);
  if (owner && moved && moved.token !== owner.token) {
    // We moved a lock someone had just taken over: give it back.
    try {
      linkSync(aside, path);
    } catch {
      /* a third party holds the path now; ours was stale anyway */
    }
    rmSync(aside, { force: true });
    return false;
  }
  rmSync(aside, { force: true });
  opts.onStale?.(path, owner, why);
  return true;
}

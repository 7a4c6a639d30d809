import { linkSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";

/**
 * A cross-process lock: a file created atomically with its owner's facts. Several workers
 * sharing one model repository use it so only one of them compiles a given entry.
 *
 * Creation is write-temp-then-link: link(2) fails if the target exists and never exposes a
 * half-written file, so a reader always sees complete owner facts. The owner refreshes the
 * file's mtime while it holds the lock. On the owner's host a lock is taken over as soon as its
 * owner is gone: the host rebooted since (another boot id), or no process has the pid, or the
 * process with that pid started at another time than the owner did (a reused pid: a restarted
 * container's PID 1 is alive again at once, and looked like the owner for the 10 minutes of the
 * mtime rule). A pid alone could be faked by any later process; boot id and start time cannot.
 * From another host only the mtime rule can tell: older than `staleMs` is abandoned.
 */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
  readonly createdAt: number;
  /** The kernel's boot id when the lock was taken (absent on systems without /proc). */
  readonly bootId?: string;
  /** The owner process's start time, in clock ticks since boot (/proc/<pid>/stat). */
  readonly startTime?: string;
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

function readOr(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

let ownBootId: string | null | undefined;

function bootId(): string | null {
  ownBootId ??= readOr("/proc/sys/kernel/random/boot_id")?.trim() ?? null;
  return ownBootId;
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised name, which may hold spaces). */
export function processStartTime(pid: number): string | null {
  const stat = readOr(`/proc/${pid}/stat`);
  if (stat === null) return null;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] ?? null;
}

/** Why the lock's owner is certainly gone, or null when it may be alive (or cannot be told). */
export function ownerGone(owner: LockOwner): string | null {
  if (owner.host !== hostname()) return null;
  const boot = bootId();
  if (owner.bootId && boot && owner.bootId !== boot) return "its host rebooted since it was taken";
  if (!pidAlive(owner.pid)) return `owner pid ${owner.pid} is not running`;
  if (owner.startTime) {
    const now = processStartTime(owner.pid);
    if (now !== null && now !== owner.startTime) {
      return `pid ${owner.pid} is another process now (started at tick ${now}, the owner at ${owner.startTime})`;
    }
  }
  return null;
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
  const boot = bootId();
  const start = processStartTime(process.pid);
  const owner: LockOwner = {
    pid: process.pid,
    host: hostname(),
    token: crypto.randomUUID(),
    createdAt: Date.now(),
    ...(boot ? { bootId: boot } : {}),
    ...(start ? { startTime: start } : {}),
  };
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
  let why: string | null = owner ? ownerGone(owner) : null;
  if (!why && age > opts.staleMs) why = `lock not refreshed for ${Math.round(age)} ms`;
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

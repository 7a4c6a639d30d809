import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { tryLock } from "../lock.ts";
import type { WarningSink } from "../warnings.ts";
import * as schema from "./schema.ts";

export type IndexDb = BunSQLiteDatabase<typeof schema>;

/** An open index database, and the file it was opened from (its inode, to tell a replacement). */
export interface IndexConnection {
  readonly sqlite: Database;
  readonly db: IndexDb;
  readonly ino: number;
}

/** The migrations drizzle-kit generated (packages/cache/drizzle), shipped with the package. */
const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));

export const DEFAULT_DB_FILE = "xlaserve.sqlite";

/** Where a damaged index is moved (the latest one only), for whoever wants to look at it. */
export const DAMAGED_SUFFIX = ".damaged";

const SIDE_FILES = ["", "-wal", "-shm"] as const;

export function defaultDbPath(stateDir: string): string {
  return join(stateDir, DEFAULT_DB_FILE);
}

/** SQLite's answer for a file that is damaged or not a database at all. */
export function isCorruption(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as never, i++) {
    const code = typeof e.code === "string" ? e.code : "";
    if (code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_NOTADB")) return true;
    if (/database disk image is malformed|file is not a database/.test(String((e as Error).message))) return true;
  }
  return false;
}

const BUSY_TIMEOUT_MS = 10_000;

/**
 * Switching a fresh file to WAL takes an exclusive lock and SQLite answers SQLITE_BUSY at once,
 * without the busy handler, when another process is doing the same: wait and retry for as long
 * as busy_timeout would have waited.
 */
function switchToWal(sqlite: Database): void {
  const deadline = performance.now() + BUSY_TIMEOUT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waitMs = 1; ; waitMs = Math.min(50, waitMs * 2)) {
    try {
      sqlite.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY" || performance.now() > deadline) throw e;
      Atomics.wait(pause, 0, 0, waitMs);
    }
  }
}

function connect(path: string): { sqlite: Database; db: IndexDb } {
  const sqlite = new Database(path, { create: true, strict: true });
  try {
    // Several workers may share one state directory: WAL lets readers run beside a writer and
    // busy_timeout makes writers queue instead of failing with SQLITE_BUSY.
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    switchToWal(sqlite);
    sqlite.exec("PRAGMA synchronous = NORMAL");
  } catch (e) {
    sqlite.close();
    throw e;
  }
  return { sqlite, db: drizzle({ client: sqlite, schema }) };
}

/**
 * drizzle's migrator reads the applied list outside its transaction, so two processes opening
 * a fresh database at once would both try to create the tables. A lock file serializes them.
 * The sync form is for a rebuild in the middle of a call.
 */
function migrateOnce(db: IndexDb, path: string): boolean {
  const lock = tryLock(`${path}.migrate.lock`, { staleMs: 30_000 });
  if (!lock) return false;
  try {
    migrate(db, { migrationsFolder: MIGRATIONS });
  } finally {
    lock.release();
  }
  return true;
}

async function migrateLocked(db: IndexDb, path: string): Promise<void> {
  for (let i = 0; !migrateOnce(db, path); i++) await Bun.sleep(Math.min(5 + i * 5, 50));
}

function migrateLockedSync(db: IndexDb, path: string): void {
  for (let i = 0; !migrateOnce(db, path); i++) Bun.sleepSync(Math.min(5 + i * 5, 50));
}

/**
 * Every page of the file read and checked: a damaged page otherwise surfaces later, as an error
 * on whichever query reaches it, or worse as rows no file backs. The index is small (a row per
 * program), so this costs milliseconds.
 */
function checkIntegrity(sqlite: Database): void {
  const rows = sqlite.query("PRAGMA integrity_check(3)").all() as Array<Record<string, unknown>>;
  const verdict = rows.map((r) => String(Object.values(r)[0])).join("; ");
  if (verdict !== "ok") {
    throw Object.assign(new Error(`integrity check: ${verdict}`), { code: "SQLITE_CORRUPT" });
  }
}

function inodeOf(path: string): number {
  return statSync(path, { throwIfNoEntry: false })?.ino ?? -1;
}

/** Moves the database and its side files aside, keeping the latest damaged copy only. */
function setAside(path: string): void {
  for (const suffix of SIDE_FILES) {
    const from = path + suffix;
    const to = path + DAMAGED_SUFFIX + suffix;
    rmSync(to, { force: true });
    try {
      if (existsSync(from)) renameSync(from, to);
    } catch {
      rmSync(from, { force: true });
    }
  }
}

function resetWarning(path: string, why: string) {
  return {
    kind: "index-reset" as const,
    code: "CACHE_CORRUPT" as const,
    message: `cache index ${path} is unusable (${why}); set aside as ${path}${DAMAGED_SUFFIX} and rebuilt from the entry files`,
    path,
  };
}

/**
 * Opens (creating and migrating) the index database and checks every page. A file that is not
 * a usable database is an index that disagrees with the truth: it is set aside and recreated
 * empty, and the caller rebuilds it from the entry files.
 */
export async function openIndexDb(path: string, onWarning: WarningSink): Promise<IndexConnection> {
  mkdirSync(dirname(path), { recursive: true });
  try {
    const conn = connect(path);
    try {
      await migrateLocked(conn.db, path);
      checkIntegrity(conn.sqlite);
      conn.sqlite.query("SELECT count(*) FROM cache_entries").get();
      return { ...conn, ino: inodeOf(path) };
    } catch (e) {
      conn.sqlite.close();
      throw e;
    }
  } catch (e) {
    // A full or unwritable disk is not cured by a new file: the caller decides (the worker
    // serves uncached). A damaged file, or a database of some other schema, is.
    if (!isCorruption(e) && !String((e as { code?: unknown }).code ?? "").startsWith("SQLITE_ERROR")) throw e;
    onWarning(resetWarning(path, (e as Error).message));
    setAside(path);
    const conn = connect(path);
    await migrateLocked(conn.db, path);
    return { ...conn, ino: inodeOf(path) };
  }
}

/**
 * Replaces a database found damaged while in use, in the middle of a call (so synchronously):
 * the damaged file is set aside unless another process sharing the state directory already
 * replaced it (the path then names another inode), and a fresh one is opened and migrated.
 */
export function reopenIndexDbSync(
  path: string,
  damaged: IndexConnection,
  why: string,
  onWarning: WarningSink,
): IndexConnection {
  try {
    damaged.sqlite.close();
  } catch {
    /* closing a damaged database can fail too; the new one replaces it either way */
  }
  if (inodeOf(path) === damaged.ino) {
    onWarning(resetWarning(path, why));
    setAside(path);
  }
  const conn = connect(path);
  migrateLockedSync(conn.db, path);
  return { ...conn, ino: inodeOf(path) };
}

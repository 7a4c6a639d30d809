import { Database } from "bun:sqlite";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { tryLock } from "../lock.ts";
import type { WarningSink } from "../warnings.ts";
import * as schema from "./schema.ts";

export type IndexDb = BunSQLiteDatabase<typeof schema>;

/** The migrations drizzle-kit generated (packages/cache/drizzle), shipped with the package. */
const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));

export const DEFAULT_DB_FILE = "xlaserve.sqlite";

export function defaultDbPath(stateDir: string): string {
  return join(stateDir, DEFAULT_DB_FILE);
}

function connect(path: string): { sqlite: Database; db: IndexDb } {
  const sqlite = new Database(path, { create: true, strict: true });
  // Several workers may share one state directory: WAL lets readers run beside a writer and
  // busy_timeout makes writers queue instead of failing with SQLITE_BUSY.
  sqlite.exec("PRAGMA busy_timeout = 10000");
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  return { sqlite, db: drizzle({ client: sqlite, schema }) };
}

/**
 * drizzle's migrator reads the applied list outside its transaction, so two processes opening
 * a fresh database at once would both try to create the tables. A lock file serializes them.
 */
async function migrateLocked(db: IndexDb, path: string): Promise<void> {
  const lockPath = `${path}.migrate.lock`;
  for (let i = 0; ; i++) {
    const lock = tryLock(lockPath, { staleMs: 30_000 });
    if (lock) {
      try {
        migrate(db, { migrationsFolder: MIGRATIONS });
      } finally {
        lock.release();
      }
      return;
    }
    await Bun.sleep(Math.min(5 + i * 5, 50));
  }
}

/**
 * Opens (creating and migrating) the index database. A file that is not a usable database is an
 * index that disagrees with the truth: it is deleted and recreated empty, and the caller
 * rebuilds it from the entry files.
 */
export async function openIndexDb(path: string, onWarning: WarningSink): Promise<{ sqlite: Database; db: IndexDb }> {
  mkdirSync(dirname(path), { recursive: true });
  try {
    const conn = connect(path);
    try {
      await migrateLocked(conn.db, path);
      conn.sqlite.query("SELECT count(*) FROM cache_entries").get();
      return conn;
    } catch (e) {
      conn.sqlite.close();
      throw e;
    }
  } catch (e) {
    onWarning({
      kind: "index-reset",
      code: "CACHE_CORRUPT",
      message: `cache index ${path} is unusable (${(e as Error).message}); recreating it from the entry files`,
      path,
    });
    for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    const conn = connect(path);
    await migrateLocked(conn.db, path);
    return conn;
  }
}

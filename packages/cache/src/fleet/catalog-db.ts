import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { XlaserveError } from "@xlaserve/core";
import { type SQL, sql } from "drizzle-orm";
import { type BunSQLiteDatabase, drizzle as drizzleSqlite } from "drizzle-orm/bun-sqlite";
import { migrate as migrateSqlite } from "drizzle-orm/bun-sqlite/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/bun-sql";
import { migrate as migratePg } from "drizzle-orm/bun-sql/migrator";
import { liteCatalogSchema, pgCatalogSchema } from "./catalog-schema.ts";

/**
 * The catalog code is written once, against the SQLite declaration of the tables: the
 * PostgreSQL tables have the same JavaScript names, columns and value types (checked by
 * catalog-schema.test.ts), and every query the catalog makes (select, insert with
 * ON CONFLICT ... DO UPDATE ... WHERE, update and delete with RETURNING) has the same builder
 * API in both of drizzle's dialects. What differs is only how to connect and what "now" is.
 */
export type CatalogDb = BunSQLiteDatabase<typeof liteCatalogSchema>;
export type CatalogTables = typeof liteCatalogSchema;

export interface CatalogConnection {
  readonly dialect: "sqlite" | "postgres";
  readonly db: CatalogDb;
  readonly tables: CatalogTables;
  /** The database clock in milliseconds since the epoch, as an SQL expression. */
  readonly nowMs: SQL;
  /** Where the catalog is, for messages (a URL's password is masked). */
  readonly where: string;
  close(): Promise<void>;
}

const migrations = (dialect: string) => fileURLToPath(new URL(`../../drizzle-catalog/${dialect}`, import.meta.url));

export const SQLITE_CATALOG_FILE = "fleet-catalog.sqlite";

/** `postgres://user:secret@host/db` -> `postgres://user:***@host/db`. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*):[^@]*@/i, "$1:***@");
}

/**
 * Two workers opening a fresh catalog at once both see no migrations applied and both create
 * the tables; the loser's CREATE fails. Looking again after a pause finds them applied.
 */
async function migrateWithRetry(run: () => Promise<void> | void): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await run();
      return;
    } catch (e) {
      if (attempt >= 5) throw e;
      await Bun.sleep(50 + Math.random() * 100 * (attempt + 1));
    }
  }
}

async function openSqlite(stateDir: string): Promise<CatalogConnection> {
  mkdirSync(stateDir, { recursive: true });
  const path = join(stateDir, SQLITE_CATALOG_FILE);
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA busy_timeout = 10000");
  sqlite.exec("PRAGMA journal_mode = WAL");
  const db = drizzleSqlite({ client: sqlite, schema: liteCatalogSchema });
  await migrateWithRetry(() => migrateSqlite(db, { migrationsFolder: migrations("sqlite") }));
  return {
    dialect: "sqlite",
    db,
    tables: liteCatalogSchema,
    nowMs: sql`CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
    where: path,
    close: async () => sqlite.close(),
  };
}

async function openPostgres(url: string): Promise<CatalogConnection> {
  const client = new Bun.SQL(url, { max: 4, idleTimeout: 30, connectionTimeout: 10 });
  const db = drizzlePg({ client, schema: pgCatalogSchema });
  try {
    await migrateWithRetry(() => migratePg(db, { migrationsFolder: migrations("pg") }));
  } catch (e) {
    await client.close().catch(() => {});
    throw new XlaserveError("UNAVAILABLE", `cannot open the fleet catalog at ${maskUrl(url)}: ${(e as Error).message}`);
  }
  return {
    dialect: "postgres",
    db: db as unknown as CatalogDb,
    tables: pgCatalogSchema as unknown as CatalogTables,
    nowMs: sql`(extract(epoch from clock_timestamp()) * 1000)::bigint`,
    where: maskUrl(url),
    close: () => client.close(),
  };
}

/** `sqlite` (a file in the state directory) or a `postgres://` / `postgresql://` URL. */
export async function openCatalogDb(spec: string, stateDir: string): Promise<CatalogConnection> {
  if (spec === "sqlite") return openSqlite(stateDir);
  if (/^postgres(ql)?:\/\//.test(spec)) return openPostgres(spec);
  throw new XlaserveError(
    "INVALID_ARGUMENT",
    `cache.catalog must be "sqlite" or a postgres:// URL, got ${JSON.stringify(maskUrl(spec))}`,
  );
}

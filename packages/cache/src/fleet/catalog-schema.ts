import * as pg from "drizzle-orm/pg-core";
import * as lite from "drizzle-orm/sqlite-core";

/**
 * The fleet catalog: which compiled programs exist in the shared blob store, who is compiling
 * what right now, and every compile that was started. One schema in two dialects, column for
 * column: the embedded SQLite (workers of one host) and PostgreSQL (a fleet). The catalog code
 * (catalog.ts) is written once against these tables; `catalog-schema.test.ts` checks the two
 * declarations stay the same. Times are milliseconds since the epoch from the database's clock,
 * so hosts whose clocks disagree still agree on when a lease lapses.
 *
 * A program's key is `<partition>/<entry>`: the backend identity and the module and options
 * hashes, the same names the per-bundle cache uses. Two bundles with the same module share it.
 */

export const litePrograms = lite.sqliteTable("fleet_programs", {
  key: lite.text("key").primaryKey(),
  partition: lite.text("partition").notNull(),
  entry: lite.text("entry").notNull(),
  /** The blob's name in the store: entries are immutable, so a rebuilt one gets a new name. */
  blob: lite.text("blob").notNull(),
  /** sha256 of the whole blob, checked on every read before the entry's own checks. */
  blobSha256: lite.text("blob_sha256").notNull(),
  sizeBytes: lite.integer("size_bytes").notNull(),
  compileMs: lite.real("compile_ms"),
  createdAt: lite.integer("created_at").notNull(),
  createdBy: lite.text("created_by").notNull(),
});

export const liteLeases = lite.sqliteTable("fleet_leases", {
  key: lite.text("key").primaryKey(),
  holder: lite.text("holder").notNull(),
  token: lite.text("token").notNull(),
  acquiredAt: lite.integer("acquired_at").notNull(),
  expiresAt: lite.integer("expires_at").notNull(),
});

export const liteCompiles = lite.sqliteTable("fleet_compiles", {
  /** The lease token the compile ran under: one row per compile started. */
  token: lite.text("token").primaryKey(),
  key: lite.text("key").notNull(),
  holder: lite.text("holder").notNull(),
  startedAt: lite.integer("started_at").notNull(),
  /** Null until the program is published (a compile whose holder died stays null). */
  finishedAt: lite.integer("finished_at"),
  compileMs: lite.real("compile_ms"),
});

/**
 * The memory probe's figures of a program, shared so a joining worker skips the probe like a
 * warm restart does. `key` and `identity` are the worker's, with every bundle path replaced by
 * the program's key (hosts mount the repository in different places).
 */
export const liteProbeFigures = lite.sqliteTable("fleet_probe_figures", {
  key: lite.text("key").primaryKey(),
  identity: lite.text("identity").notNull(),
  scratchBytes: lite.integer("scratch_bytes").notNull(),
  weightBytes: lite.integer("weight_bytes").notNull(),
  measuredAt: lite.integer("measured_at").notNull(),
});

const ms = (name: string) => pg.bigint(name, { mode: "number" });

export const pgPrograms = pg.pgTable("fleet_programs", {
  key: pg.text("key").primaryKey(),
  partition: pg.text("partition").notNull(),
  entry: pg.text("entry").notNull(),
  blob: pg.text("blob").notNull(),
  blobSha256: pg.text("blob_sha256").notNull(),
  sizeBytes: ms("size_bytes").notNull(),
  compileMs: pg.doublePrecision("compile_ms"),
  createdAt: ms("created_at").notNull(),
  createdBy: pg.text("created_by").notNull(),
});

export const pgLeases = pg.pgTable("fleet_leases", {
  key: pg.text("key").primaryKey(),
  holder: pg.text("holder").notNull(),
  token: pg.text("token").notNull(),
  acquiredAt: ms("acquired_at").notNull(),
  expiresAt: ms("expires_at").notNull(),
});

export const pgCompiles = pg.pgTable("fleet_compiles", {
  token: pg.text("token").primaryKey(),
  key: pg.text("key").notNull(),
  holder: pg.text("holder").notNull(),
  startedAt: ms("started_at").notNull(),
  finishedAt: ms("finished_at"),
  compileMs: pg.doublePrecision("compile_ms"),
});

export const pgProbeFigures = pg.pgTable("fleet_probe_figures", {
  key: pg.text("key").primaryKey(),
  identity: pg.text("identity").notNull(),
  scratchBytes: ms("scratch_bytes").notNull(),
  weightBytes: ms("weight_bytes").notNull(),
  measuredAt: ms("measured_at").notNull(),
});

export const liteCatalogSchema = {
  programs: litePrograms,
  leases: liteLeases,
  compiles: liteCompiles,
  probeFigures: liteProbeFigures,
};
export const pgCatalogSchema = {
  programs: pgPrograms,
  leases: pgLeases,
  compiles: pgCompiles,
  probeFigures: pgProbeFigures,
};

export type CatalogProgram = typeof litePrograms.$inferSelect;
export type CatalogCompile = typeof liteCompiles.$inferSelect;
export type CatalogProbeFigures = typeof liteProbeFigures.$inferSelect;

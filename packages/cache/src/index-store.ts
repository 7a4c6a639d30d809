import type { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { asc, eq, sql } from "drizzle-orm";
import { type IndexConnection, type IndexDb, isCorruption } from "./db/open.ts";
import { type CacheEntryRow, type NewCacheEntryRow, cacheBundles, cacheEntries } from "./db/schema.ts";

export interface BundleRef {
  readonly dir: string;
  readonly name: string;
}

/** Replaces a damaged database with a fresh one (db/open.ts reopenIndexDbSync). */
export type ReopenIndex = (damaged: IndexConnection, why: string) => IndexConnection;

/**
 * Typed access to the index tables. Knows nothing of entry files: ProgramCache and the
 * reconciler decide what the rows should be; this only reads and writes them.
 *
 * A damaged page can surface on any query, long after the open's integrity check (a disk that
 * went bad, a copy made mid-write): every call that meets one has the database replaced by an
 * empty one (`reopen`), tells `onRebuilt` (which refills it from the entry files), and is run
 * once more. Inside a transaction the error goes on to the transaction's own call.
 */
export class IndexStore {
  #conn: IndexConnection;
  #depth = 0;
  /** Called after a damaged database was replaced: rebuild its rows from the files. */
  onRebuilt: () => void = () => {};

  constructor(
    conn: IndexConnection,
    private readonly reopen: ReopenIndex,
  ) {
    this.#conn = conn;
  }

  get db(): IndexDb {
    return this.#conn.db;
  }

  get sqlite(): Database {
    return this.#conn.sqlite;
  }

  /** Runs `fn` on the database, replacing a damaged one and trying once more. */
  use<T>(fn: (db: IndexDb) => T): T {
    if (this.#depth > 0) return fn(this.#conn.db);
    try {
      return fn(this.#conn.db);
    } catch (e) {
      if (!isCorruption(e)) throw e;
      this.#conn = this.reopen(this.#conn, (e as Error).message);
      this.onRebuilt();
      return fn(this.#conn.db);
    }
  }

  registerBundle(ref: BundleRef, now: number): void {
    this.use((db) =>
      db
        .insert(cacheBundles)
        .values({ dir: ref.dir, name: ref.name, lastSeenAt: now })
        .onConflictDoUpdate({ target: cacheBundles.dir, set: { name: ref.name, lastSeenAt: now } })
        .run(),
    );
  }

  bundles(): BundleRef[] {
    return this.use((db) => db.select({ dir: cacheBundles.dir, name: cacheBundles.name }).from(cacheBundles).all());
  }

  /** Forgets bundle directories that no longer exist, with their rows. */
  dropVanishedBundles(): string[] {
    const gone = this.bundles().filter((b) => !existsSync(b.dir));
    this.use((db) => {
      for (const b of gone) {
        db.delete(cacheEntries).where(eq(cacheEntries.bundleDir, b.dir)).run();
        db.delete(cacheBundles).where(eq(cacheBundles.dir, b.dir)).run();
      }
    });
    return gone.map((b) => b.dir);
  }

  upsert(row: NewCacheEntryRow): void {
    const { path: _path, ...rest } = row;
    this.use((db) =>
      db.insert(cacheEntries).values(row).onConflictDoUpdate({ target: cacheEntries.path, set: rest }).run(),
    );
  }

  get(path: string): CacheEntryRow | undefined {
    return this.use((db) => db.select().from(cacheEntries).where(eq(cacheEntries.path, path)).get());
  }

  recordHit(path: string, loadMs: number, now: number): boolean {
    const updated = this.use((db) =>
      db
        .update(cacheEntries)
        .set({ lastHitAt: now, loadMs, hitCount: sql`${cacheEntries.hitCount} + 1` })
        .where(eq(cacheEntries.path, path))
        .returning({ path: cacheEntries.path })
        .all(),
    );
    return updated.length > 0;
  }

  remove(path: string): void {
    this.use((db) => db.delete(cacheEntries).where(eq(cacheEntries.path, path)).run());
  }

  rowsOf(bundleDir: string): CacheEntryRow[] {
    return this.use((db) => db.select().from(cacheEntries).where(eq(cacheEntries.bundleDir, bundleDir)).all());
  }

  all(): CacheEntryRow[] {
    return this.use((db) =>
      db
        .select()
        .from(cacheEntries)
        .orderBy(
          asc(cacheEntries.bundle),
          asc(cacheEntries.moduleFile),
          asc(cacheEntries.partition),
          asc(cacheEntries.path),
        )
        .all(),
    );
  }

  /** Least recently used first: never-hit entries count from their creation. */
  lruOrder(): CacheEntryRow[] {
    return this.use((db) =>
      db
        .select()
        .from(cacheEntries)
        .orderBy(asc(sql`coalesce(${cacheEntries.lastHitAt}, ${cacheEntries.createdAt})`), asc(cacheEntries.path))
        .all(),
    );
  }

  totals(): { entries: number; bytes: number } {
    const row = this.use((db) =>
      db
        .select({ entries: sql<number>`count(*)`, bytes: sql<number>`coalesce(sum(${cacheEntries.sizeBytes}), 0)` })
        .from(cacheEntries)
        .get(),
    );
    return { entries: Number(row?.entries ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  /** Runs `fn` in one transaction: a reconcile's many row changes commit together. */
  transaction<T>(fn: () => T): T {
    return this.use(() => {
      this.#depth++;
      try {
        return this.#conn.sqlite.transaction(fn)();
      } finally {
        this.#depth--;
      }
    });
  }
}

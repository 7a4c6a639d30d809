import type { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { asc, eq, sql } from "drizzle-orm";
import type { IndexDb } from "./db/open.ts";
import { type CacheEntryRow, type NewCacheEntryRow, cacheBundles, cacheEntries } from "./db/schema.ts";

export interface BundleRef {
  readonly dir: string;
  readonly name: string;
}

/**
 * Typed access to the index tables. Knows nothing of entry files: ProgramCache and the
 * reconciler decide what the rows should be; this only reads and writes them.
 */
export class IndexStore {
  constructor(
    readonly db: IndexDb,
    readonly sqlite: Database,
  ) {}

  registerBundle(ref: BundleRef, now: number): void {
    this.db
      .insert(cacheBundles)
      .values({ dir: ref.dir, name: ref.name, lastSeenAt: now })
      .onConflictDoUpdate({ target: cacheBundles.dir, set: { name: ref.name, lastSeenAt: now } })
      .run();
  }

  bundles(): BundleRef[] {
    return this.db.select({ dir: cacheBundles.dir, name: cacheBundles.name }).from(cacheBundles).all();
  }

  /** Forgets bundle directories that no longer exist, with their rows. */
  dropVanishedBundles(): string[] {
    const gone = this.bundles().filter((b) => !existsSync(b.dir));
    for (const b of gone) {
      this.db.delete(cacheEntries).where(eq(cacheEntries.bundleDir, b.dir)).run();
      this.db.delete(cacheBundles).where(eq(cacheBundles.dir, b.dir)).run();
    }
    return gone.map((b) => b.dir);
  }

  upsert(row: NewCacheEntryRow): void {
    const { path: _path, ...rest } = row;
    this.db.insert(cacheEntries).values(row).onConflictDoUpdate({ target: cacheEntries.path, set: rest }).run();
  }

  get(path: string): CacheEntryRow | undefined {
    return this.db.select().from(cacheEntries).where(eq(cacheEntries.path, path)).get();
  }

  recordHit(path: string, loadMs: number, now: number): boolean {
    const updated = this.db
      .update(cacheEntries)
      .set({ lastHitAt: now, loadMs, hitCount: sql`${cacheEntries.hitCount} + 1` })
      .where(eq(cacheEntries.path, path))
      .returning({ path: cacheEntries.path })
      .all();
    return updated.length > 0;
  }

  remove(path: string): void {
    this.db.delete(cacheEntries).where(eq(cacheEntries.path, path)).run();
  }

  rowsOf(bundleDir: string): CacheEntryRow[] {
    return this.db.select().from(cacheEntries).where(eq(cacheEntries.bundleDir, bundleDir)).all();
  }

  all(): CacheEntryRow[] {
    return this.db
      .select()
      .from(cacheEntries)
      .orderBy(
        asc(cacheEntries.bundle),
        asc(cacheEntries.moduleFile),
        asc(cacheEntries.partition),
        asc(cacheEntries.path),
      )
      .all();
  }

  /** Least recently used first: never-hit entries count from their creation. */
  lruOrder(): CacheEntryRow[] {
    return this.db
      .select()
      .from(cacheEntries)
      .orderBy(asc(sql`coalesce(${cacheEntries.lastHitAt}, ${cacheEntries.createdAt})`), asc(cacheEntries.path))
      .all();
  }

  totals(): { entries: number; bytes: number } {
    const row = this.db
      .select({ entries: sql<number>`count(*)`, bytes: sql<number>`coalesce(sum(${cacheEntries.sizeBytes}), 0)` })
      .from(cacheEntries)
      .get();
    return { entries: Number(row?.entries ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  /** Runs `fn` in one transaction: a reconcile's many row changes commit together. */
  transaction<T>(fn: () => T): T {
    return this.sqlite.transaction(fn)();
  }
}

import { and, asc, eq, lt, sql } from "drizzle-orm";
import type { CatalogConnection } from "./catalog-db.ts";
import type { CatalogCompile, CatalogProbeFigures, CatalogProgram } from "./catalog-schema.ts";

export type LeaseAttempt =
  | { readonly held: true; readonly token: string; readonly tookOverFrom: string | null }
  | { readonly held: false; readonly holder: string; readonly expiresInMs: number };

/**
 * The fleet catalog's operations, the same code on SQLite and PostgreSQL. Each is one
 * statement, so none needs a transaction: a lease is taken by one INSERT ... ON CONFLICT DO
 * UPDATE ... WHERE the old lease has lapsed, which the database applies atomically, so of any
 * number of workers asking at once exactly one gets a row back.
 */
export class Catalog {
  constructor(
    readonly conn: CatalogConnection,
    /** Who this worker is, in leases and compile records ("host:pid"). */
    readonly holder: string,
  ) {}

  async program(key: string): Promise<CatalogProgram | null> {
    const { db, tables } = this.conn;
    const rows = await db.select().from(tables.programs).where(eq(tables.programs.key, key)).limit(1);
    return rows[0] ?? null;
  }

  async programs(): Promise<CatalogProgram[]> {
    const { db, tables } = this.conn;
    return db.select().from(tables.programs).orderBy(asc(tables.programs.key));
  }

  /** Records a program stored under `blob`; a later publish of the same key replaces it. */
  async publish(p: Omit<CatalogProgram, "createdAt" | "createdBy">): Promise<void> {
    const { db, tables, nowMs } = this.conn;
    const row = { ...p, createdAt: nowMs, createdBy: this.holder };
    const { key: _key, ...set } = row;
    await db.insert(tables.programs).values(row).onConflictDoUpdate({ target: tables.programs.key, set });
  }

  /** Drops a program's row, only if it still names that blob (a rebuilt one stays). */
  async dropProgram(key: string, blobSha256: string): Promise<boolean> {
    const { db, tables } = this.conn;
    const gone = await db
      .delete(tables.programs)
      .where(and(eq(tables.programs.key, key), eq(tables.programs.blobSha256, blobSha256)))
      .returning({ key: tables.programs.key });
    return gone.length > 0;
  }

  /** Takes the compile lease of `key` for `ttlMs`, if nobody holds it or its holder let it lapse. */
  async tryLease(key: string, ttlMs: number): Promise<LeaseAttempt> {
    const { db, tables, nowMs } = this.conn;
    const t = tables.leases;
    const before = await this.#lease(key);
    const token = crypto.randomUUID();
    const expiresAt = sql`${nowMs} + ${Math.round(ttlMs)}`;
    const won = await db
      .insert(t)
      .values({ key, holder: this.holder, token, acquiredAt: nowMs, expiresAt })
      .onConflictDoUpdate({
        target: t.key,
        set: { holder: this.holder, token, acquiredAt: nowMs, expiresAt },
        setWhere: lt(t.expiresAt, nowMs),
      })
      .returning({ token: t.token });
    if (won[0]?.token === token) {
      const tookOverFrom = before && before.token !== token ? before.holder : null;
      return { held: true, token, tookOverFrom };
    }
    const now = await this.#lease(key);
    return { held: false, holder: now?.holder ?? "unknown", expiresInMs: now ? now.expiresInMs : 0 };
  }

  /** Extends a held lease; false when it is no longer ours (it lapsed and was taken over). */
  async renew(key: string, token: string, ttlMs: number): Promise<boolean> {
    const { db, tables, nowMs } = this.conn;
    const t = tables.leases;
    const rows = await db
      .update(t)
      .set({ expiresAt: sql`${nowMs} + ${Math.round(ttlMs)}` })
      .where(and(eq(t.key, key), eq(t.token, token)))
      .returning({ key: t.key });
    return rows.length > 0;
  }

  async release(key: string, token: string): Promise<void> {
    const { db, tables } = this.conn;
    await db.delete(tables.leases).where(and(eq(tables.leases.key, key), eq(tables.leases.token, token)));
  }

  async compileStarted(key: string, token: string): Promise<void> {
    const { db, tables, nowMs } = this.conn;
    await db
      .insert(tables.compiles)
      .values({ token, key, holder: this.holder, startedAt: nowMs })
      .onConflictDoNothing();
  }

  async compileFinished(token: string, compileMs: number): Promise<void> {
    const { db, tables, nowMs } = this.conn;
    await db.update(tables.compiles).set({ finishedAt: nowMs, compileMs }).where(eq(tables.compiles.token, token));
  }

  /** Every compile started (of one key, or all), oldest first. */
  async compiles(key?: string): Promise<CatalogCompile[]> {
    const { db, tables } = this.conn;
    const q = db.select().from(tables.compiles);
    const rows = await (key ? q.where(eq(tables.compiles.key, key)) : q).orderBy(asc(tables.compiles.startedAt));
    return rows.map((r) => ({
      ...r,
      startedAt: Number(r.startedAt),
      finishedAt: r.finishedAt === null ? null : Number(r.finishedAt),
    }));
  }

  /** Every program's shared probe figures (a few rows per program: read once at open). */
  async probeFigures(): Promise<CatalogProbeFigures[]> {
    const { db, tables } = this.conn;
    const rows = await db.select().from(tables.probeFigures);
    return rows.map((r) => ({
      ...r,
      scratchBytes: Number(r.scratchBytes),
      weightBytes: Number(r.weightBytes),
      measuredAt: Number(r.measuredAt),
    }));
  }

  async putProbeFigures(row: CatalogProbeFigures): Promise<void> {
    const { db, tables } = this.conn;
    const { key: _key, ...set } = row;
    await db.insert(tables.probeFigures).values(row).onConflictDoUpdate({ target: tables.probeFigures.key, set });
  }

  async #lease(key: string): Promise<{ holder: string; token: string; expiresInMs: number } | null> {
    const { db, tables, nowMs } = this.conn;
    const t = tables.leases;
    const rows = await db
      .select({ holder: t.holder, token: t.token, expiresInMs: sql<number>`${t.expiresAt} - ${nowMs}` })
      .from(t)
      .where(eq(t.key, key))
      .limit(1);
    const r = rows[0];
    return r ? { holder: r.holder, token: r.token, expiresInMs: Number(r.expiresInMs) } : null;
  }
}

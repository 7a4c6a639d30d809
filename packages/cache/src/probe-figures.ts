import { eq } from "drizzle-orm";
import type { IndexDb } from "./db/open.ts";
import { probeFigures } from "./db/schema.ts";

/** What a warm start needs from a program's earlier memory probe. */
export interface StoredProbeFigures {
  readonly scratchBytes: number;
  readonly weightBytes: number;
  readonly measuredAt: number;
}

/** Figures stored for `entryPath` under exactly `identity`; other identities read as absent. */
export function readProbeFigures(db: IndexDb, entryPath: string, identity: string): StoredProbeFigures | null {
  const row = db.select().from(probeFigures).where(eq(probeFigures.entryPath, entryPath)).get();
  if (!row || row.identity !== identity) return null;
  return { scratchBytes: row.scratchBytes, weightBytes: row.weightBytes, measuredAt: row.measuredAt };
}

export function writeProbeFigures(
  db: IndexDb,
  entryPath: string,
  f: { identity: string; scratchBytes: number; weightBytes: number; measuredAt?: number },
): void {
  const row = {
    entryPath,
    identity: f.identity,
    scratchBytes: Math.round(f.scratchBytes),
    weightBytes: Math.round(f.weightBytes),
    measuredAt: f.measuredAt ?? Date.now(),
  };
  const { entryPath: _key, ...set } = row;
  db.insert(probeFigures).values(row).onConflictDoUpdate({ target: probeFigures.entryPath, set }).run();
}

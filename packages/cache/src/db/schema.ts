import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The index of cache entries. It is a derived view: the entry files under each bundle's
 * `.cache/` are the truth, and the index is rebuilt from them whenever the two disagree. It
 * exists so `cache ls | prune` and the metrics need no scan of every entry's bytes, and to keep
 * the hit statistics (last hit, hit count) that LRU pruning needs.
 */
export const cacheEntries = sqliteTable(
  "cache_entries",
  {
    /** Absolute path of the entry file: unique across bundles and partitions. */
    path: text("path").primaryKey(),
    bundleDir: text("bundle_dir").notNull(),
    bundle: text("bundle").notNull(),
    partition: text("partition").notNull(),
    /** The entry file's name: `<module sha256>-<options hash>.xprog`. */
    entry: text("entry").notNull(),
    /** The module file it was compiled from, as last seen ("model.b8.mlir"). */
    moduleFile: text("module_file"),
    moduleSha256: text("module_sha256").notNull(),
    optionsHash: text("options_hash").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    compileMs: real("compile_ms"),
    loadMs: real("load_ms"),
    /** Milliseconds since the epoch. */
    createdAt: integer("created_at").notNull(),
    lastHitAt: integer("last_hit_at"),
    hitCount: integer("hit_count").notNull().default(0),
  },
  (t) => [index("cache_entries_bundle_dir").on(t.bundleDir), index("cache_entries_last_hit").on(t.lastHitAt)],
);

/** Bundle directories the cache has served: the places to scan when the index is rebuilt. */
export const cacheBundles = sqliteTable("cache_bundles", {
  dir: text("dir").primaryKey(),
  name: text("name").notNull(),
  lastSeenAt: integer("last_seen_at").notNull(),
});

export type CacheEntryRow = typeof cacheEntries.$inferSelect;
export type NewCacheEntryRow = typeof cacheEntries.$inferInsert;

/**
 * The memory probe's figures per program entry (issue 5): a warm start whose programs all load
 * from the cache resolves the weight budget from these instead of running every program again.
 * `identity` names what the figures were measured with (partition, entry, input shapes, weight
 * bytes); figures whose identity differs are ignored and re-measured. Not derived from the entry
 * files: a lost row only costs one probe.
 */
export const probeFigures = sqliteTable("probe_figures", {
  /** The program entry's path (as cache_entries.path). */
  entryPath: text("entry_path").primaryKey(),
  identity: text("identity").notNull(),
  /** Run scratch: peak minus what was resident before the run. */
  scratchBytes: integer("scratch_bytes").notNull(),
  weightBytes: integer("weight_bytes").notNull(),
  /** Milliseconds since the epoch. */
  measuredAt: integer("measured_at").notNull(),
});

export type ProbeFiguresRow = typeof probeFigures.$inferSelect;

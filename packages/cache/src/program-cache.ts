import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { XlaserveError } from "@xlaserve/core";
import { defaultDbPath, openIndexDb, reopenIndexDbSync } from "./db/open.ts";
import type { CacheEntryRow } from "./db/schema.ts";
import { entryName, optionsHash } from "./entry-key.ts";
import { type BundleRef, IndexStore } from "./index-store.ts";
import { EntryResolver } from "./entry-resolver.ts";
import { KeyedMutex } from "./keyed-mutex.ts";
import { type StoredProbeFigures, readProbeFigures, writeProbeFigures } from "./probe-figures.ts";
import { CACHE_DIR, entryPath } from "./layout.ts";
import { type CacheCounters, emptyCounters } from "./metrics.ts";
import { canonicalIdentity, partitionName } from "./partition.ts";
import { type PruneReport, pruneLru } from "./prune.ts";
import { type ReconcileReport, reconcileBundle } from "./reconcile.ts";
import { type SyncResult, syncModuleHashes } from "./sync-modules.ts";
import type { BundleWithModules, CacheBundle, EntryKey, GetOrCompileArgs, GetOrCompileResult } from "./types.ts";
import { type VerifyReport, verifyBundles } from "./verify.ts";
import { type FleetOptions, ProgramFleet } from "./fleet/fleet.ts";
import type { CacheWarning, WarningSink } from "./warnings.ts";

export interface ProgramCacheOptions {
  /** The worker's state directory; the index lives at `<stateDir>/xlaserve.sqlite`. */
  readonly stateDir: string;
  /** Overrides the index database path. */
  readonly dbPath?: string;
  /** Receives every removed, repaired or rejected thing. Default: console.warn. */
  readonly onWarning?: WarningSink;
  /**
   * A compile lock not refreshed for this long is taken over (its owner is hung or on another
   * host). Locks of dead processes on this host are taken over at once. Default 10 minutes.
   */
  readonly lockStaleMs?: number;
  /** How often a process waiting for another's compile looks again. Default 25 ms. */
  readonly lockPollMs?: number;
  /**
   * A fleet's shared cache (catalog and blob store): a program missing here is fetched from it,
   * or compiled once across all its workers. Absent: this cache is the worker's own.
   */
  readonly fleet?: FleetOptions;
  /**
   * The fleet already being opened (ProgramFleet.open, started early so its connection overlaps
   * the engine's start); used in place of `fleet`.
   */
  readonly fleetOpening?: Promise<ProgramFleet | null>;
}

/**
 * The program cache (issue 5): compiled programs stored under each bundle's `.cache/`,
 * partitioned by backend identity, named by module hash and options hash, checked on every
 * read, written atomically, compiled once across processes, indexed in SQLite.
 */
export class ProgramCache {
  /** Live counters for /metrics. */
  readonly counters: CacheCounters = emptyCounters();
  readonly dbPath: string;
  readonly #store: IndexStore;
  readonly #warn: WarningSink;
  readonly #flight = new KeyedMutex();
  readonly #resolver: EntryResolver;
  readonly #staleMs: number;
  readonly #pollMs: number;
  readonly #known = new Map<string, string>();
  /** The fleet's shared cache, when configured. */
  readonly fleet: ProgramFleet | null;
  #closed = false;

  private constructor(
    store: IndexStore,
    dbPath: string,
    opts: ProgramCacheOptions,
    warn: WarningSink,
    fleet: ProgramFleet | null,
  ) {
    this.fleet = fleet;
    this.#store = store;
    // A database found damaged in use was replaced by an empty one: every bundle this process
    // knows is reconciled into it from its files.
    store.onRebuilt = () => {
      for (const [dir, name] of this.#known) {
        store.registerBundle({ dir, name }, Date.now());
        reconcileBundle(store, { dir, name }, warn, this.#staleMs);
      }
      this.#refreshTotals();
    };
    this.dbPath = dbPath;
    this.#warn = warn;
    this.#staleMs = opts.lockStaleMs ?? 10 * 60_000;
    this.#pollMs = opts.lockPollMs ?? 25;
    this.#resolver = new EntryResolver({
      store,
      counters: this.counters,
      warn,
      lockStaleMs: this.#staleMs,
      lockPollMs: this.#pollMs,
      onIndexChanged: () => this.#refreshTotals(),
      ...(fleet ? { fleet } : {}),
    });
  }

  static async open(opts: ProgramCacheOptions): Promise<ProgramCache> {
    const dbPath = resolve(opts.dbPath ?? defaultDbPath(opts.stateDir));
    const warn: WarningSink = opts.onWarning ?? ((w: CacheWarning) => console.warn(`[cache] ${w.message}`));
    const fleet = opts.fleetOpening
      ? await opts.fleetOpening
      : opts.fleet
        ? await ProgramFleet.open(opts.fleet, resolve(opts.stateDir), warn)
        : null;
    const conn = await openIndexDb(dbPath, warn);
    const store = new IndexStore(conn, (damaged, why) => reopenIndexDbSync(dbPath, damaged, why, warn));
    const cache = new ProgramCache(store, dbPath, opts, warn, fleet);
    cache.#store.dropVanishedBundles();
    for (const b of cache.#store.bundles()) cache.#known.set(b.dir, b.name);
    // Known bundles are re-checked against their files now, so a stale index never drives
    // ls, prune or the byte counts.
    for (const [dir, name] of cache.#known) reconcileBundle(cache.#store, { dir, name }, warn, cache.#staleMs);
    cache.#refreshTotals();
    return cache;
  }

  /** Where a program would be stored: for logs and tests. */
  keyFor(args: Pick<GetOrCompileArgs, "bundle" | "module" | "backend" | "options" | "keyExtra">): EntryKey {
    const identity = canonicalIdentity(args.backend.identity(args.options.device));
    const partition = partitionName(identity);
    const optsHash = optionsHash(args.options, args.keyExtra);
    const entry = entryName(args.module.sha256, optsHash);
    return {
      identity,
      partition,
      optionsHash: optsHash,
      entry,
      path: entryPath(resolve(args.bundle.dir), partition, entry),
    };
  }

  /**
   * Returns the module's program: loaded from the cache when a valid entry exists (a hit),
   * otherwise compiled, stored, and returned as compiled (a miss; "recompiled" when a stored
   * entry was bad and was removed). Bad entries never load and never throw: they are reported
   * through onWarning. Compile errors do throw (COMPILE_FAILED). A later start loads the stored
   * executable, never a recompile of the module, so the program's answers stay the same bytes
   * across restarts (ARCHITECTURE rule 6).
   */
  async getOrCompile(args: GetOrCompileArgs): Promise<GetOrCompileResult> {
    this.#assertOpen();
    const key = this.keyFor(args);
    this.#register(args.bundle);
    return this.#flight.run(key.path, () => this.#resolver.resolve(args, key));
  }

  /**
   * On bundle load (ARCHITECTURE rule 3): drops the programs of modules whose hash changed, in
   * every partition, keeps all programs on a weights-only update, rewrites mlir_hashes.json and
   * brings the index in line with the bundle's files.
   */
  syncModuleHashes(bundle: BundleWithModules): SyncResult & { index: ReconcileReport } {
    this.#assertOpen();
    const ref = this.#register(bundle);
    const result = syncModuleHashes(this.#store, { ...bundle, dir: ref.dir }, this.#warn);
    const index = reconcileBundle(this.#store, ref, this.#warn, this.#staleMs);
    this.#refreshTotals();
    return { ...result, index };
  }

  /** Registers every `<repository>/<model>/` that has a `.cache/`, for ls/verify/prune. */
  addRepository(repository: string): BundleRef[] {
    const root = resolve(repository);
    const found: BundleRef[] = [];
    for (const name of readdirSync(root)) {
      const dir = join(root, name);
      try {
        if (statSync(dir).isDirectory() && existsSync(join(dir, CACHE_DIR))) found.push(this.#register({ name, dir }));
      } catch {
        /* vanished */
      }
    }
    return found;
  }

  /** Every entry of every known bundle, after bringing the index in line with the files. */
  ls(): CacheEntryRow[] {
    this.#reconcileAll();
    return this.#store.all();
  }

  /** Reads every entry in full; removes and reports the ones that fail their checks. */
  verify(): VerifyReport {
    this.#reconcileAll();
    const report = verifyBundles(this.#store, this.#bundleRefs(), this.#warn);
    this.counters.corruptEntries += report.removed.filter((p) => p.reason !== "foreign-partition").length;
    this.counters.foreignEntries += report.removed.filter((p) => p.reason === "foreign-partition").length;
    this.#refreshTotals();
    return report;
  }

  /** Removes least recently hit entries until the cache holds at most maxBytes. */
  prune(maxBytes: number): PruneReport {
    if (!Number.isFinite(maxBytes) || maxBytes < 0) {
      throw new XlaserveError("INVALID_ARGUMENT", `maxBytes must be a non-negative number, got ${maxBytes}`);
    }
    this.#reconcileAll();
    const report = pruneLru(this.#store, maxBytes);
    this.counters.evictions += report.removed.length;
    this.#refreshTotals();
    return report;
  }

  /** The memory probe's stored figures for a program entry, or null (none, or another identity). */
  probeFigures(entryPath: string, identity: string): StoredProbeFigures | null {
    this.#assertOpen();
    // A worker joining a fleet has none of its own yet: a peer's, measured on the same identity, do.
    return (
      this.#store.use((db) => readProbeFigures(db, entryPath, identity)) ??
      this.fleet?.probeFigures(entryPath, identity) ??
      null
    );
  }

  /** Records a program's measured probe figures (replacing older ones), and shares them with the fleet. */
  storeProbeFigures(entryPath: string, figures: StoredProbeFigures & { identity: string }): void {
    this.#assertOpen();
    this.#store.use((db) => writeProbeFigures(db, entryPath, figures));
    this.fleet?.shareProbeFigures(entryPath, figures);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#store.sqlite.close();
    this.closed = this.fleet?.close() ?? Promise.resolve();
  }

  /** Settles once a closed cache has let go of the fleet's catalog connection. */
  closed: Promise<void> = Promise.resolve();

  #register(bundle: CacheBundle): BundleRef {
    const dir = resolve(bundle.dir);
    const name = bundle.name || basename(dir);
    if (this.#known.get(dir) !== name) {
      this.#known.set(dir, name);
      this.#store.registerBundle({ dir, name }, Date.now());
    }
    return { dir, name };
  }

  #bundleRefs(): BundleRef[] {
    return [...this.#known].map(([dir, name]) => ({ dir, name }));
  }

  #reconcileAll(): void {
    this.#assertOpen();
    for (const dir of this.#store.dropVanishedBundles()) this.#known.delete(dir);
    for (const ref of this.#bundleRefs()) reconcileBundle(this.#store, ref, this.#warn, this.#staleMs);
    this.#refreshTotals();
  }

  #refreshTotals(): void {
    try {
      const t = this.#store.totals();
      this.counters.entries = t.entries;
      this.counters.bytes = t.bytes;
    } catch {
      /* a busy or broken index: the totals stay as they were until the next reconcile */
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new XlaserveError("DISPOSED", "the program cache is closed");
  }
}

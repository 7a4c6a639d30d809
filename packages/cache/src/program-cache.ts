import type { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { type Executable, type ModuleSource, XlaserveError, asXlaserveError } from "@xlaserve/core";
import { writeFileAtomic } from "./atomic-write.ts";
import { checkEntry } from "./check-entry.ts";
import { defaultDbPath, openIndexDb } from "./db/open.ts";
import type { CacheEntryRow } from "./db/schema.ts";
import { encodeEntry } from "./entry-format.ts";
import { entryName, optionsHash } from "./entry-key.ts";
import { readEntryFile, removeIfSame } from "./entry-io.ts";
import { sha256Hex } from "./hash.ts";
import { type BundleRef, IndexStore } from "./index-store.ts";
import { KeyedMutex } from "./keyed-mutex.ts";
import { CACHE_DIR, LOCK_SUFFIX, entryPath, partitionDir } from "./layout.ts";
import { tryLock } from "./lock.ts";
import { type CacheCounters, emptyCounters } from "./metrics.ts";
import { canonicalIdentity, partitionName } from "./partition.ts";
import { type PruneReport, pruneLru } from "./prune.ts";
import { type ReconcileReport, reconcileBundle } from "./reconcile.ts";
import { type SyncResult, syncModuleHashes } from "./sync-modules.ts";
import type { BundleWithModules, CacheBundle, EntryKey, GetOrCompileArgs, GetOrCompileResult } from "./types.ts";
import { type VerifyReport, verifyBundles } from "./verify.ts";
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
}

type LoadAttempt =
  | { readonly kind: "hit"; readonly result: GetOrCompileResult }
  | { readonly kind: "absent" }
  | { readonly kind: "rejected"; readonly reason: string };

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
  readonly #sqlite: Database;
  readonly #warn: WarningSink;
  readonly #flight = new KeyedMutex();
  readonly #staleMs: number;
  readonly #pollMs: number;
  readonly #known = new Map<string, string>();
  #closed = false;

  private constructor(
    store: IndexStore,
    sqlite: Database,
    dbPath: string,
    opts: ProgramCacheOptions,
    warn: WarningSink,
  ) {
    this.#store = store;
    this.#sqlite = sqlite;
    this.dbPath = dbPath;
    this.#warn = warn;
    this.#staleMs = opts.lockStaleMs ?? 10 * 60_000;
    this.#pollMs = opts.lockPollMs ?? 25;
  }

  static async open(opts: ProgramCacheOptions): Promise<ProgramCache> {
    const dbPath = resolve(opts.dbPath ?? defaultDbPath(opts.stateDir));
    const warn: WarningSink = opts.onWarning ?? ((w: CacheWarning) => console.warn(`[cache] ${w.message}`));
    const { sqlite, db } = await openIndexDb(dbPath, warn);
    const cache = new ProgramCache(new IndexStore(db, sqlite), sqlite, dbPath, opts, warn);
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
   * through onWarning. Compile errors do throw (COMPILE_FAILED).
   */
  async getOrCompile(args: GetOrCompileArgs): Promise<GetOrCompileResult> {
    this.#assertOpen();
    const key = this.keyFor(args);
    this.#register(args.bundle);
    return this.#flight.run(key.path, () => this.#resolve(args, key));
  }

  async #resolve(args: GetOrCompileArgs, key: EntryKey): Promise<GetOrCompileResult> {
    let rejected: string | undefined;
    const first = await this.#tryLoad(args, key);
    if (first.kind === "hit") return first.result;
    if (first.kind === "rejected") rejected = first.reason;
    const source = await this.#readSource(args);
    mkdirSync(partitionDir(resolve(args.bundle.dir), key.partition), { recursive: true });
    const lockPath = key.path + LOCK_SUFFIX;
    for (;;) {
      const lock = tryLock(lockPath, {
        staleMs: this.#staleMs,
        onStale: (path, owner, why) =>
          this.#warn({
            kind: "stale-lock",
            code: "CACHE_CORRUPT",
            message: `took over stale compile lock ${path} (${why}, owner ${owner ? `pid ${owner.pid} on ${owner.host}` : "unknown"})`,
            path,
            bundle: args.bundle.name,
          }),
      });
      if (lock) {
        try {
          // Another process may have finished this entry while we waited for the lock.
          const again = await this.#tryLoad(args, key);
          if (again.kind === "hit") return again.result;
          if (again.kind === "rejected") rejected ??= again.reason;
          return await this.#compileAndStore(args, key, source, rejected);
        } finally {
          lock.release();
        }
      }
      await Bun.sleep(this.#pollMs);
      if (existsSync(key.path)) {
        const waited = await this.#tryLoad(args, key);
        if (waited.kind === "hit") return waited.result;
        if (waited.kind === "rejected") rejected ??= waited.reason;
      }
    }
  }

  /** Reads the module now and refuses bytes that are not the ones the entry is named after. */
  async #readSource(args: GetOrCompileArgs): Promise<ModuleSource> {
    const bytes = await args.module.read();
    const actual = sha256Hex(bytes);
    if (actual !== args.module.sha256) {
      throw new XlaserveError(
        "MODULE_INVALID",
        `${args.bundle.name}/${args.module.file} changed on disk since the bundle was loaded; reload the bundle`,
        { bundle: args.bundle.name, file: args.module.file, expected: args.module.sha256, actual },
      );
    }
    return { bytes, format: args.module.format, origin: `${args.bundle.name}/${args.module.file}` };
  }

  async #tryLoad(args: GetOrCompileArgs, key: EntryKey): Promise<LoadAttempt> {
    const t0 = performance.now();
    let read: ReturnType<typeof readEntryFile>;
    try {
      read = readEntryFile(key.path);
    } catch (e) {
      return this.#reject(args, key, null, "corrupt-entry", "unreadable", (e as Error).message);
    }
    if (!read) return { kind: "absent" };
    const checked = checkEntry(read.bytes, {
      identity: key.identity,
      partition: key.partition,
      sourceHash: args.module.sha256,
      optionsHash: key.optionsHash,
    });
    if (!checked.ok) return this.#reject(args, key, read.ino, checked.kind, checked.reason, checked.detail);
    let executable: Executable;
    try {
      executable = await args.backend.deserialize(checked.payload, args.options);
    } catch (e) {
      return this.#reject(args, key, read.ino, "deserialize-failed", "deserialize-failed", (e as Error).message);
    }
    const loadMs = performance.now() - t0;
    const now = Date.now();
    const c = this.counters;
    c.hits++;
    c.loads++;
    c.loadMsTotal += loadMs;
    c.bytesRead += read.bytes.length;
    if (!this.#indexSafely(() => this.#store.recordHit(key.path, loadMs, now), true)) {
      // The index lost this row (deleted database, another worker's write): re-add it.
      this.#upsertRow(args, key, read.bytes.length, checked.header.facts.compileMs, checked.header.facts.createdAt, {
        loadMs,
        lastHitAt: now,
        hitCount: 1,
      });
      this.#refreshTotals();
    }
    return {
      kind: "hit",
      result: {
        executable,
        outcome: "hit",
        compileMs: null,
        loadMs,
        entryPath: key.path,
        partition: key.partition,
        sizeBytes: read.bytes.length,
      },
    };
  }

  #reject(
    args: GetOrCompileArgs,
    key: EntryKey,
    ino: number | null,
    kind: CacheWarning["kind"],
    reason: string,
    detail: string,
  ): LoadAttempt {
    removeIfSame(key.path, ino);
    this.#indexSafely(() => this.#store.remove(key.path), undefined);
    if (kind === "foreign-entry") this.counters.foreignEntries++;
    else this.counters.corruptEntries++;
    this.#refreshTotals();
    this.#warn({
      kind,
      code: kind === "foreign-entry" ? "CACHE_PARTITION_MISMATCH" : "CACHE_CORRUPT",
      message: `cache entry for ${args.bundle.name}/${args.module.file} rejected (${reason}: ${detail}); removed, recompiling`,
      path: key.path,
      reason,
      bundle: args.bundle.name,
    });
    return { kind: "rejected", reason };
  }

  async #compileAndStore(
    args: GetOrCompileArgs,
    key: EntryKey,
    source: ModuleSource,
    rejected: string | undefined,
  ): Promise<GetOrCompileResult> {
    const t0 = performance.now();
    let executable: Executable;
    try {
      executable = args.compile ? await args.compile() : await args.backend.compile(source, args.options);
    } catch (e) {
      throw asXlaserveError(e, "COMPILE_FAILED");
    }
    const compileMs = performance.now() - t0;
    const c = this.counters;
    c.compiles++;
    c.misses++;
    if (rejected) c.recompiles++;
    c.compileMsTotal += compileMs;
    let sizeBytes = 0;
    try {
      const payload = await args.backend.serialize(executable);
      const createdAt = Date.now();
      const bytes = encodeEntry(
        { identity: key.identity, partition: key.partition, moduleFile: args.module.file, compileMs, createdAt },
        args.module.sha256,
        key.optionsHash,
        payload,
      );
      writeFileAtomic(key.path, bytes);
      sizeBytes = bytes.length;
      c.bytesWritten += sizeBytes;
      this.#upsertRow(args, key, sizeBytes, compileMs, createdAt, { loadMs: null, lastHitAt: null, hitCount: 0 });
      this.#refreshTotals();
    } catch (e) {
      // The program is still good to serve; only the next start pays for the compile again.
      this.#warn({
        kind: "write-failed",
        code: "CACHE_CORRUPT",
        message: `could not store the program for ${args.bundle.name}/${args.module.file}: ${(e as Error).message}`,
        path: key.path,
        bundle: args.bundle.name,
      });
    }
    return {
      executable,
      outcome: rejected ? "recompiled" : "miss",
      compileMs,
      loadMs: null,
      entryPath: key.path,
      partition: key.partition,
      sizeBytes,
      ...(rejected ? { rejected } : {}),
    };
  }

  /**
   * Index writes on the serving path must not fail a model load: the files are the truth and a
   * later reconcile repairs the row. A failure (a locked or broken database) becomes a warning.
   */
  #indexSafely<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (e) {
      this.#warn({
        kind: "index-repaired",
        code: "CACHE_CORRUPT",
        message: `cache index update failed (${(e as Error).message}); it will be rebuilt from the files`,
      });
      return fallback;
    }
  }

  #upsertRow(
    args: GetOrCompileArgs,
    key: EntryKey,
    sizeBytes: number,
    compileMs: number | null,
    createdAt: number,
    hits: { loadMs: number | null; lastHitAt: number | null; hitCount: number },
  ): void {
    this.#indexSafely(
      () =>
        this.#store.upsert({
          path: key.path,
          bundleDir: resolve(args.bundle.dir),
          bundle: args.bundle.name,
          partition: key.partition,
          entry: key.entry,
          moduleFile: args.module.file,
          moduleSha256: args.module.sha256,
          optionsHash: key.optionsHash,
          sizeBytes,
          compileMs,
          createdAt,
          ...hits,
        }),
      undefined,
    );
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

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#sqlite.close();
  }

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
    const t = this.#indexSafely(() => this.#store.totals(), null);
    if (!t) return;
    this.counters.entries = t.entries;
    this.counters.bytes = t.bytes;
  }

  #assertOpen(): void {
    if (this.#closed) throw new XlaserveError("DISPOSED", "the program cache is closed");
  }
}

import { existsSync, mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { type Executable, type ModuleSource, XlaserveError, asXlaserveError } from "@xlaserve/core";
import { writeFileAtomic } from "./atomic-write.ts";
import { checkEntry } from "./check-entry.ts";
import { encodeEntry } from "./entry-format.ts";
import { readEntryFile, removeIfSame } from "./entry-io.ts";
import { sha256Hex } from "./hash.ts";
import type { IndexStore } from "./index-store.ts";
import { LOCK_SUFFIX, partitionDir } from "./layout.ts";
import { type HeldLock, tryLock } from "./lock.ts";
import type { CacheCounters } from "./metrics.ts";
import type { EntryKey, GetOrCompileArgs, GetOrCompileResult } from "./types.ts";
import type { CacheWarning, WarningSink } from "./warnings.ts";
import type { Built, ProgramFleet } from "./fleet/fleet.ts";

export interface ResolverDeps {
  readonly store: IndexStore;
  readonly counters: CacheCounters;
  readonly warn: WarningSink;
  readonly lockStaleMs: number;
  readonly lockPollMs: number;
  /** Called after the index changed, to refresh the byte and entry totals. */
  readonly onIndexChanged: () => void;
  /** The shared cache of a fleet, consulted before compiling. */
  readonly fleet?: ProgramFleet;
}

type LoadAttempt =
  | { readonly kind: "hit"; readonly result: GetOrCompileResult }
  | { readonly kind: "absent" }
  | { readonly kind: "rejected"; readonly reason: string };

/**
 * The serving path of one entry: load and check it, or take the cross-process lock, look again,
 * compile, store. The caller (ProgramCache) has already serialized requests for the same entry
 * within this process.
 */
export class EntryResolver {
  constructor(private readonly deps: ResolverDeps) {}

  async resolve(args: GetOrCompileArgs, key: EntryKey): Promise<GetOrCompileResult> {
    let rejected: string | undefined;
    const first = await this.#tryLoad(args, key);
    if (first.kind === "hit") return first.result;
    if (first.kind === "rejected") rejected = first.reason;
    const source = await this.#readSource(args);
    const lockPath = key.path + LOCK_SUFFIX;
    for (;;) {
      let lock: HeldLock | null;
      try {
        mkdirSync(partitionDir(resolve(args.bundle.dir), key.partition), { recursive: true });
        lock = this.#tryLock(args, lockPath);
      } catch (e) {
        // A read-only or full bundle directory: serve the program, just without a cache.
        this.deps.warn({
          kind: "write-failed",
          code: "CACHE_CORRUPT",
          message: `cannot use the cache directory for ${args.bundle.name} (${(e as Error).message}); compiling without caching`,
          path: key.path,
          bundle: args.bundle.name,
        });
        if (this.deps.fleet) return await this.#viaFleet(this.deps.fleet, args, key, source, rejected, false);
        return await this.#compileAndStore(args, key, source, rejected, false);
      }
      if (lock) {
        try {
          // Another process may have finished this entry while we waited for the lock.
          const again = await this.#tryLoad(args, key);
          if (again.kind === "hit") return again.result;
          if (again.kind === "rejected") rejected ??= again.reason;
          if (this.deps.fleet) return await this.#viaFleet(this.deps.fleet, args, key, source, rejected, true);
          return await this.#compileAndStore(args, key, source, rejected, true);
        } finally {
          lock.release();
        }
      }
      await Bun.sleep(this.deps.lockPollMs);
      if (existsSync(key.path)) {
        const waited = await this.#tryLoad(args, key);
        if (waited.kind === "hit") return waited.result;
        if (waited.kind === "rejected") rejected ??= waited.reason;
      }
    }
  }

  #tryLock(args: GetOrCompileArgs, lockPath: string): HeldLock | null {
    return tryLock(lockPath, {
      staleMs: this.deps.lockStaleMs,
      onStale: (path, owner, why) =>
        this.deps.warn({
          kind: "stale-lock",
          code: "CACHE_CORRUPT",
          message: `took over stale compile lock ${path} (${why}, owner ${owner ? `pid ${owner.pid} on ${owner.host}` : "unknown"})`,
          path,
          bundle: args.bundle.name,
        }),
    });
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
    return this.#loadBytes(args, key, read.bytes, read.ino, t0);
  }

  /**
   * Checks entry bytes and deserializes them. `local`: the bytes are the entry file's (`ino`
   * its inode, or null for a copy just written): a failure removes the file, a hit records the
   * row. Not local: bytes only in memory (a fleet blob served to a worker whose bundle directory
   * is read-only).
   */
  async #loadBytes(
    args: GetOrCompileArgs,
    key: EntryKey,
    bytes: Uint8Array,
    ino: number | null,
    t0: number,
    local = ino !== null,
  ): Promise<LoadAttempt> {
    const checked = checkEntry(bytes, {
      identity: key.identity,
      partition: key.partition,
      sourceHash: args.module.sha256,
      optionsHash: key.optionsHash,
    });
    if (!checked.ok) {
      if (!local) return { kind: "rejected", reason: checked.reason };
      return this.#reject(args, key, ino, checked.kind, checked.reason, checked.detail);
    }
    let executable: Executable;
    try {
      executable = await args.backend.deserialize(checked.payload, args.options);
    } catch (e) {
      if (!local) return { kind: "rejected", reason: "deserialize-failed" };
      return this.#reject(args, key, ino, "deserialize-failed", "deserialize-failed", (e as Error).message);
    }
    const loadMs = performance.now() - t0;
    const now = Date.now();
    const c = this.deps.counters;
    c.hits++;
    c.loads++;
    c.loadMsTotal += loadMs;
    c.bytesRead += bytes.length;
    if (local && !this.#indexSafely(() => this.deps.store.recordHit(key.path, loadMs, now), true)) {
      // The index lost this row (deleted database, another worker's write): re-add it.
      this.#upsertRow(args, key, bytes.length, checked.header.facts.compileMs, checked.header.facts.createdAt, {
        loadMs,
        lastHitAt: now,
        hitCount: 1,
      });
      this.deps.onIndexChanged();
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
        sizeBytes: bytes.length,
        from: "local",
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
    this.#indexSafely(() => this.deps.store.remove(key.path), undefined);
    if (kind === "foreign-entry") this.deps.counters.foreignEntries++;
    else this.deps.counters.corruptEntries++;
    this.deps.onIndexChanged();
    this.deps.warn({
      kind,
      code: kind === "foreign-entry" ? "CACHE_PARTITION_MISMATCH" : "CACHE_CORRUPT",
      message: `cache entry for ${args.bundle.name}/${args.module.file} rejected (${reason}: ${detail}); removed, recompiling`,
      path: key.path,
      reason,
      bundle: args.bundle.name,
    });
    return { kind: "rejected", reason };
  }

  /**
   * Missing locally: the fleet's copy when it has one (stored locally, then loaded and checked
   * like any entry), else compiled here under the fleet's lease and published. `local` false:
   * the bundle directory cannot hold entries (a read-only model volume), so fleet blobs are
   * loaded straight from memory and compiled programs only published.
   */
  async #viaFleet(
    fleet: ProgramFleet,
    args: GetOrCompileArgs,
    key: EntryKey,
    source: ModuleSource,
    rejected: string | undefined,
    local: boolean,
  ): Promise<GetOrCompileResult> {
    const label = `${args.bundle.name}/${args.module.file}`;
    const expected = {
      identity: key.identity,
      partition: key.partition,
      sourceHash: args.module.sha256,
      optionsHash: key.optionsHash,
    };
    const check = (bytes: Uint8Array) => {
      const r = checkEntry(bytes, expected);
      return r.ok ? null : `${r.reason}: ${r.detail}`;
    };
    const got = await fleet.obtain(key, check, () => this.#build(args, key, source), label);
    if (got.kind === "fetched") {
      const t0 = performance.now();
      // The local copy needs no fsync: a torn one fails its checks and is fetched again.
      if (!local || this.#storeLocal(args, key, got.bytes, null, false)) {
        // Loaded from the bytes in hand; the local copy is for the next start.
        const loaded = await this.#loadBytes(args, key, got.bytes, null, t0, local);
        if (loaded.kind === "hit") return { ...loaded.result, from: "fleet" };
        await fleet.drop(got.program, loaded.kind === "rejected" ? loaded.reason : "vanished", label);
        rejected ??= loaded.kind === "rejected" ? loaded.reason : undefined;
      }
      return await this.#compileAndStore(args, key, source, rejected, local);
    }
    const { built } = got;
    if (rejected) this.deps.counters.recompiles++;
    if (local) this.#storeLocal(args, key, built.bytes, built.compileMs, true);
    return this.#compiledResult(built, key, rejected);
  }

  async #compileAndStore(
    args: GetOrCompileArgs,
    key: EntryKey,
    source: ModuleSource,
    rejected: string | undefined,
    store: boolean,
  ): Promise<GetOrCompileResult> {
    const built = await this.#build(args, key, source, store);
    if (rejected) this.deps.counters.recompiles++;
    if (store && built.bytes.length > 0) this.#storeLocal(args, key, built.bytes, built.compileMs, true);
    return this.#compiledResult(built, key, rejected);
  }

  #compiledResult(built: Built<Executable>, key: EntryKey, rejected: string | undefined): GetOrCompileResult {
    return {
      executable: built.executable,
      outcome: rejected ? "recompiled" : "miss",
      compileMs: built.compileMs,
      loadMs: null,
      entryPath: key.path,
      partition: key.partition,
      sizeBytes: built.bytes.length,
      from: "compile",
      ...(rejected ? { rejected } : {}),
    };
  }

  /** Compiles and encodes the entry (empty bytes when it is not to be stored or cannot be). */
  async #build(args: GetOrCompileArgs, key: EntryKey, source: ModuleSource, encode = true): Promise<Built<Executable>> {
    const t0 = performance.now();
    let executable: Executable;
    try {
      executable = args.compile ? await args.compile() : await args.backend.compile(source, args.options);
    } catch (e) {
      throw asXlaserveError(e, "COMPILE_FAILED");
    }
    const compileMs = performance.now() - t0;
    const c = this.deps.counters;
    c.compiles++;
    c.misses++;
    c.compileMsTotal += compileMs;
    if (!encode) return { executable, compileMs, bytes: new Uint8Array(0) };
    try {
      const payload = await args.backend.serialize(executable);
      const facts = {
        identity: key.identity,
        partition: key.partition,
        moduleFile: args.module.file,
        compileMs,
        createdAt: Date.now(),
      };
      return { executable, compileMs, bytes: encodeEntry(facts, args.module.sha256, key.optionsHash, payload) };
    } catch (e) {
      // The program is still good to serve; only the next start pays for the compile again.
      this.#writeFailed(args, key, e);
      return { executable, compileMs, bytes: new Uint8Array(0) };
    }
  }

  /** Writes the entry file and its row; false (and a warning) when the file cannot be written. */
  #storeLocal(
    args: GetOrCompileArgs,
    key: EntryKey,
    bytes: Uint8Array,
    compileMs: number | null,
    durable: boolean,
  ): boolean {
    try {
      writeFileAtomic(key.path, bytes, { durable });
    } catch (e) {
      this.#writeFailed(args, key, e);
      return false;
    }
    this.deps.counters.bytesWritten += bytes.length;
    if (compileMs !== null) {
      this.#upsertRow(args, key, bytes.length, compileMs, Date.now(), { loadMs: null, lastHitAt: null, hitCount: 0 });
      this.deps.onIndexChanged();
    }
    return true;
  }

  #writeFailed(args: GetOrCompileArgs, key: EntryKey, e: unknown): void {
    this.deps.warn({
      kind: "write-failed",
      code: "CACHE_CORRUPT",
      message: `could not store the program for ${args.bundle.name}/${args.module.file}: ${(e as Error).message}`,
      path: key.path,
      bundle: args.bundle.name,
    });
  }

  /**
   * Index writes on the serving path must not fail a model load: the files are the truth and a
   * later reconcile repairs the row. A failure (a locked or broken database) becomes a warning.
   */
  #indexSafely<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (e) {
      this.deps.warn({
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
        this.deps.store.upsert({
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
}

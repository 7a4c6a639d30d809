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

export interface ResolverDeps {
  readonly store: IndexStore;
  readonly counters: CacheCounters;
  readonly warn: WarningSink;
  readonly lockStaleMs: number;
  readonly lockPollMs: number;
  /** Called after the index changed, to refresh the byte and entry totals. */
  readonly onIndexChanged: () => void;
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
        return await this.#compileAndStore(args, key, source, rejected, false);
      }
      if (lock) {
        try {
          // Another process may have finished this entry while we waited for the lock.
          const again = await this.#tryLoad(args, key);
          if (again.kind === "hit") return again.result;
          if (again.kind === "rejected") rejected ??= again.reason;
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
    const c = this.deps.counters;
    c.hits++;
    c.loads++;
    c.loadMsTotal += loadMs;
    c.bytesRead += read.bytes.length;
    if (!this.#indexSafely(() => this.deps.store.recordHit(key.path, loadMs, now), true)) {
      // The index lost this row (deleted database, another worker's write): re-add it.
      this.#upsertRow(args, key, read.bytes.length, checked.header.facts.compileMs, checked.header.facts.createdAt, {
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

  async #compileAndStore(
    args: GetOrCompileArgs,
    key: EntryKey,
    source: ModuleSource,
    rejected: string | undefined,
    store: boolean,
  ): Promise<GetOrCompileResult> {
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
    if (rejected) c.recompiles++;
    c.compileMsTotal += compileMs;
    let sizeBytes = 0;
    if (store) {
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
        this.deps.onIndexChanged();
      } catch (e) {
        // The program is still good to serve; only the next start pays for the compile again.
        this.deps.warn({
          kind: "write-failed",
          code: "CACHE_CORRUPT",
          message: `could not store the program for ${args.bundle.name}/${args.module.file}: ${(e as Error).message}`,
          path: key.path,
          bundle: args.bundle.name,
        });
      }
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

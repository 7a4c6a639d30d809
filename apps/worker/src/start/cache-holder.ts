import { mkdirSync } from "node:fs";
import type { Logger } from "@xlaserve/core";
import { ProgramCache, type ProgramCacheOptions } from "@xlaserve/cache";

/** How often an unavailable program cache is tried again. */
export const CACHE_RETRY_MS = 30_000;

/**
 * The program cache, or the reason there is none: serving needs no disk, so a state directory on
 * a full (or read-only, or missing) disk makes the worker serve uncached, every program compiled
 * on each load, instead of refusing to start. The cache is tried again every `retryMs`, and
 * used from the next load on once it opens (space returned). `degraded` is for /metrics.
 */
export class CacheHolder {
  #cache: ProgramCache | null = null;
  #reason: string | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #closed = false;
  /** Cache writes that failed (a disk that filled up while serving): each program still served. */
  writeFailures = 0;

  constructor(
    private readonly options: ProgramCacheOptions,
    private readonly log: Logger,
    private readonly retryMs = CACHE_RETRY_MS,
  ) {}

  get cache(): ProgramCache | null {
    return this.#cache;
  }

  /** Why the worker serves uncached, or null while the cache is in use. */
  get unavailable(): string | null {
    return this.#reason;
  }

  get degraded(): boolean {
    return this.#cache === null;
  }

  async open(): Promise<void> {
    try {
      mkdirSync(this.options.stateDir, { recursive: true });
      const cache = await ProgramCache.open({
        ...this.options,
        onWarning: (w) => {
          if (w.kind === "write-failed") this.writeFailures++;
          this.options.onWarning?.(w);
        },
      });
      if (this.#closed) {
        cache.close();
        return;
      }
      if (this.#reason !== null) {
        this.log.info("program cache available again: programs are cached from the next load on", {
          stateDir: this.options.stateDir,
        });
      }
      this.#cache = cache;
      this.#reason = null;
    } catch (err) {
      const reason = (err as Error).message ?? String(err);
      if (this.#reason === null) {
        this.log.warn("program cache unavailable: serving uncached (every program compiles on each load)", {
          stateDir: this.options.stateDir,
          error: reason,
          retryMs: this.retryMs,
        });
      }
      this.#reason = reason;
      this.#schedule();
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#cache?.close();
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.open();
    }, this.retryMs);
    // A retry never keeps the process alive on its own.
    this.#timer.unref?.();
  }
}

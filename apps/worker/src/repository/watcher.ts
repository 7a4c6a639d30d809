import { statSync } from "node:fs";
import type { Logger } from "@xlaserve/core";
import { bundleFingerprint } from "@xlaserve/core/bundle/fingerprint.ts";
import { discoverBundles } from "@xlaserve/core/bundle/load.ts";

/** What the watcher drives (the registry). */
export interface WatcherTarget {
  loadFromDir(name: string, dir: string, opts: { throwOnError: boolean; fingerprint?: string }): Promise<void>;
  remove(name: string): Promise<void>;
  /** Renames a loaded model in place (its folder was renamed, contents unchanged). */
  rename(from: string, to: string, dir: string): Promise<boolean>;
  /** The fingerprint each known model was last loaded (or tried) from. */
  slotState(name: string): { attempted: string } | undefined;
  loadedNames(): string[];
}

export interface WatcherOptions {
  readonly repository: string;
  readonly intervalMs: number;
  readonly target: WatcherTarget;
  readonly log: Logger;
  /** Defaults to core's bundleFingerprint (bundle files only, never .cache/: ARCHITECTURE rule 4). */
  readonly fingerprint?: (dir: string) => string;
}

export type WatchAction = {
  kind: "load" | "reload" | "unload" | "rename";
  name: string;
  dir?: string;
  fingerprint?: string;
  from?: string;
};

function dirIdentity(dir: string): string {
  try {
    const st = statSync(dir);
    return `${st.dev}:${st.ino}`;
  } catch {
    return "";
  }
}

/**
 * Dynamic model repository (Triton's POLL mode, ReactantServer's watcher.jl): every interval,
 * fingerprint each bundle's own files; act on a change only once the same new fingerprint was seen
 * on two polls in a row, so a bundle still being copied is never loaded half-written. A new or
 * changed bundle is loaded in the background and swapped in; a removed one is unloaded after
 * draining. A renamed folder (same directory identity, unchanged files) renames the live model in
 * place: nothing is unloaded, compiled or probed. A folder renamed and edited is a new name, loaded
 * through the program cache (it moved with the folder's .cache/, keyed by module hash: no
 * recompile), plus a removed one.
 */
export class RepositoryWatcher {
  private seen = new Map<string, string>();
  private seenIds = new Map<string, string>();
  private pending = new Map<string, string | null>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running = false;
  private polling: Promise<void> | null = null;
  private readonly fingerprint: (dir: string) => string;
  polls = 0;
  readonly actions: WatchAction[] = [];

  constructor(private readonly options: WatcherOptions) {
    this.fingerprint = options.fingerprint ?? ((dir) => bundleFingerprint(dir).key);
  }

  /** Seeds the last-applied state from what the registry loaded, so the first poll is a no-op. */
  seed(): void {
    this.seen.clear();
    this.seenIds.clear();
    for (const { name, dir } of this.scan()) {
      const attempted = this.options.target.slotState(name)?.attempted;
      if (attempted !== undefined) {
        this.seen.set(name, attempted);
        this.seenIds.set(name, dirIdentity(dir));
      }
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.options.log.info("model repository watcher started", {
      repository: this.options.repository,
      intervalMs: this.options.intervalMs,
    });
    const loop = () => {
      if (!this.running) return;
      this.polling = this.pollOnce()
        .catch((err) => this.options.log.warn("watcher: poll failed", { error: String(err) }))
        .finally(() => {
          this.polling = null;
          if (this.running) this.timer = setTimeout(loop, this.options.intervalMs);
        });
    };
    this.timer = setTimeout(loop, this.options.intervalMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.polling) await this.polling;
  }

  private scan(): { name: string; dir: string }[] {
    try {
      return discoverBundles(this.options.repository);
    } catch {
      return []; // a transiently absent repository: keep running
    }
  }

  /** One poll: diff the repository against the last-applied state, act on confirmed changes. */
  async pollOnce(): Promise<void> {
    this.polls++;
    const current = new Map<string, { dir: string; fp: string }>();
    for (const b of this.scan()) current.set(b.name, { dir: b.dir, fp: this.fingerprint(b.dir) });
    const nextPending = new Map<string, string | null>();
    const confirmed: WatchAction[] = [];
    const names = new Set([...current.keys(), ...this.seen.keys()]);
    for (const name of names) {
      const desired = current.get(name)?.fp ?? null;
      const seen = this.seen.get(name) ?? null;
      if (desired === seen) continue;
      if (this.pending.has(name) && this.pending.get(name) === desired) {
        const dir = current.get(name)?.dir;
        if (desired === null) confirmed.push({ kind: "unload", name });
        else confirmed.push({ kind: seen === null ? "load" : "reload", name, dir, fingerprint: desired });
      } else {
        nextPending.set(name, desired);
      }
    }
    this.pending = nextPending;
    // Renames: a new name whose folder is a loaded model's folder (same device and inode), with
    // unchanged files, while that model's name disappeared.
    const unloads = new Set(confirmed.filter((a) => a.kind === "unload").map((a) => a.name));
    for (const action of confirmed) {
      if (action.kind !== "load" || !action.dir) continue;
      const id = dirIdentity(action.dir);
      for (const old of unloads) {
        if (id !== "" && this.seenIds.get(old) === id && this.seen.get(old) === action.fingerprint) {
          action.kind = "rename";
          action.from = old;
          unloads.delete(old);
          break;
        }
      }
    }
    const renamedFrom = new Set(confirmed.flatMap((a) => (a.kind === "rename" && a.from ? [a.from] : [])));
    const todo = confirmed.filter((a) => !(a.kind === "unload" && renamedFrom.has(a.name)));
    // Loads first, then unloads: a renamed folder serves under its new name before the old goes.
    todo.sort((a, b) => (a.kind === "unload" ? 1 : 0) - (b.kind === "unload" ? 1 : 0));
    for (const action of todo) {
      this.actions.push(action);
      this.options.log.info("watcher: change detected", {
        model: action.name,
        action: action.kind,
        ...(action.from ? { from: action.from } : {}),
      });
      if (action.kind === "rename" && action.from && action.dir && action.fingerprint !== undefined) {
        const from = action.from;
        const renamed = await this.options.target.rename(from, action.name, action.dir);
        this.seen.delete(from);
        this.seenIds.delete(from);
        this.seen.set(action.name, action.fingerprint);
        this.seenIds.set(action.name, dirIdentity(action.dir));
        if (!renamed) {
          await this.options.target.remove(from);
          await this.options.target.loadFromDir(action.name, action.dir, {
            throwOnError: false,
            fingerprint: action.fingerprint,
          });
        }
      } else if (action.kind === "unload") {
        await this.options.target.remove(action.name);
        this.seen.delete(action.name);
        this.seenIds.delete(action.name);
      } else if (action.dir && action.fingerprint !== undefined) {
        this.seenIds.set(action.name, dirIdentity(action.dir));
        // The attempted fingerprint counts as applied even when the load fails: the error stays
        // visible in the index and the bundle is retried when its files change again.
        this.seen.set(action.name, action.fingerprint);
        await this.options.target.loadFromDir(action.name, action.dir, {
          throwOnError: false,
          fingerprint: action.fingerprint,
        });
      }
    }
  }
}

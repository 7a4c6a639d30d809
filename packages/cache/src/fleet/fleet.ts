import { hostname } from "node:os";
import { sha256Hex } from "../hash.ts";
import type { EntryKey } from "../types.ts";
import type { WarningSink } from "../warnings.ts";
import { type BlobStore, openBlobStore } from "./blob-store.ts";
import { Catalog } from "./catalog.ts";
import { openCatalogDb } from "./catalog-db.ts";
import type { CatalogProbeFigures, CatalogProgram } from "./catalog-schema.ts";

export interface FleetOptions {
  /** `sqlite` (a catalog file in the state directory: workers of one host) or a postgres:// URL. */
  readonly catalog: string;
  /** A directory every worker shares, or `s3://bucket/prefix`. */
  readonly store: string;
  /**
   * A compile lease not renewed for this long has lapsed (its holder died) and is taken over.
   * The holder renews it every third of this. Default 30 s.
   */
  readonly leaseMs?: number;
  /** How often a worker waiting for another's compile looks again. Default 50 ms. */
  readonly pollMs?: number;
  /** This worker's name in leases and compile records. Default `<hostname>:<pid>`. */
  readonly holder?: string;
  /** Where an S3 store's endpoint and credentials are read from. Default process.env. */
  readonly env?: Record<string, string | undefined>;
}

/** What the fleet counted since this worker opened it (for /metrics and tests). */
export interface FleetCounters {
  /** Programs loaded from the shared store instead of compiled. */
  fetches: number;
  /** Programs this worker compiled under a lease and published. */
  publishes: number;
  /** Blobs that failed their checks: dropped from the catalog, never served. */
  badBlobs: number;
  /** Times this worker found another holding a program's lease and waited. */
  leaseWaits: number;
  /** Lapsed leases of dead holders this worker took over. */
  takeovers: number;
  /** Programs compiled without the fleet because the catalog or store failed. */
  unavailable: number;
}

/** A program's entry file, compiled here (the caller's build callback). */
export interface Built<E> {
  readonly bytes: Uint8Array;
  readonly compileMs: number;
  readonly executable: E;
}

export type Obtained<E> =
  | { readonly kind: "fetched"; readonly bytes: Uint8Array; readonly program: CatalogProgram }
  | { readonly kind: "built"; readonly built: Built<E>; readonly published: boolean };

/** Checks an entry's bytes the way a local read does; returns why they are unfit, or null. */
export type EntryCheck = (bytes: Uint8Array) => string | null;

/** The blob name of an entry: partition directory, entry name plus the blob's checksum. */
export function blobName(key: Pick<EntryKey, "partition" | "entry">, blobSha256: string): string {
  return `${key.partition}/${key.entry.replace(/\.xprog$/, "")}.${blobSha256.slice(0, 16)}.xprog`;
}

export function programKey(key: Pick<EntryKey, "partition" | "entry">): string {
  return `${key.partition}/${key.entry}`;
}

/** A string with every `<bundle>/.cache/<partition>/<entry>` path replaced by the program's key. */
export function portable(text: string): string {
  return text.replace(/[^|#\s]*\/\.cache\/([^/|#\s]+\/[^/|#\s]+\.xprog)/g, "$1");
}

/**
 * The fleet's side of the program cache: one compile per program across every worker. A
 * worker missing a program locally looks it up in the catalog; if it is there, the blob is
 * fetched and checked (its size against the catalog, then every check of a local entry: header
 * and payload checksums, identity, source and options hashes); if not, the worker
 * takes the program's lease, compiles, stores the blob, publishes it and lets go. Others wait
 * for the result meanwhile, and take the lease over once it lapses (its holder died), so no
 * one waits on a dead worker. A blob that fails its checks is dropped and rebuilt once, never
 * served. When the catalog or store fails, the worker compiles for itself, saying so: the fleet
 * saves time, it is never what keeps a model from loading.
 */
export class ProgramFleet {
  readonly counters: FleetCounters = {
    fetches: 0,
    publishes: 0,
    badBlobs: 0,
    leaseWaits: 0,
    takeovers: 0,
    unavailable: 0,
  };
  readonly leaseMs: number;
  readonly pollMs: number;

  readonly #probe = new Map<string, CatalogProbeFigures>();
  #probeShareFailed = false;

  private constructor(
    readonly catalog: Catalog,
    readonly store: BlobStore,
    private readonly warn: WarningSink,
    opts: FleetOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.pollMs = opts.pollMs ?? 50;
  }

  static async open(opts: FleetOptions, stateDir: string, warn: WarningSink): Promise<ProgramFleet> {
    const store = openBlobStore(opts.store, opts.env);
    const conn = await openCatalogDb(opts.catalog, stateDir);
    const fleet = new ProgramFleet(new Catalog(conn, opts.holder ?? `${hostname()}:${process.pid}`), store, warn, opts);
    // The probe figures are read once, here: the memory probe asks for them synchronously.
    for (const row of await fleet.catalog.probeFigures()) fleet.#probe.set(row.key, row);
    return fleet;
  }

  /** The fleet's probe figures for a worker's probe key, under exactly that identity; else null. */
  probeFigures(
    key: string,
    identity: string,
  ): { scratchBytes: number; weightBytes: number; measuredAt: number } | null {
    const row = this.#probe.get(portable(key));
    return row && row.identity === portable(identity) ? row : null;
  }

  /** Shares figures this worker measured (in the background: a failure only costs a probe). */
  shareProbeFigures(
    key: string,
    f: { identity: string; scratchBytes: number; weightBytes: number; measuredAt: number },
  ): void {
    const row = {
      key: portable(key),
      identity: portable(f.identity),
      scratchBytes: Math.round(f.scratchBytes),
      weightBytes: Math.round(f.weightBytes),
      measuredAt: f.measuredAt,
    };
    this.#probe.set(row.key, row);
    this.catalog.putProbeFigures(row).catch((e: Error) => {
      if (this.#probeShareFailed) return;
      this.#probeShareFailed = true;
      this.warn({
        kind: "fleet-unavailable",
        code: "UNAVAILABLE",
        message: `could not share probe figures with the fleet: ${e.message}`,
      });
    });
  }

  get where(): string {
    return `catalog ${this.catalog.conn.where}, store ${this.store.where}`;
  }

  /**
   * The entry for `key`: fetched from the store when the fleet has it, else built here under
   * the program's lease (and published), or built without the fleet when it is unavailable.
   */
  async obtain<E>(
    key: EntryKey,
    check: EntryCheck,
    build: () => Promise<Built<E>>,
    label: string,
  ): Promise<Obtained<E>> {
    const pkey = programKey(key);
    let droppedOne = false;
    let waitingOn: string | null = null;
    for (let turn = 0; ; turn++) {
      let step: Awaited<ReturnType<ProgramFleet["step"]>>;
      try {
        step = await this.step(pkey, check, label);
      } catch (e) {
        return this.#withoutFleet(build, label, e);
      }
      if (step.kind === "fetched") return step;
      if (step.kind === "dropped") {
        // Rebuilt once (by whoever takes the lease first); a second bad blob is compiled here
        // and not published, so a store that keeps damaging blobs cannot loop a worker.
        if (droppedOne) return { kind: "built", built: await build(), published: false };
        droppedOne = true;
        continue;
      }
      if (step.kind === "leased") {
        const built = await this.#buildUnderLease(key, pkey, step.token, step.tookOverFrom, build, label);
        if (built) return built;
        continue; // published by another while we took the lease
      }
      if (waitingOn !== step.holder) {
        waitingOn = step.holder;
        this.counters.leaseWaits++;
      }
      await Bun.sleep(Math.min(this.pollMs * (1 + Math.floor(turn / 20)), 500));
    }
  }

  /** One look: the program if published and good, else the lease if free, else who holds it. */
  private async step(pkey: string, check: EntryCheck, label: string) {
    const program = await this.catalog.program(pkey);
    if (program) {
      const bytes = await this.#fetch(program, check, label);
      return bytes ? ({ kind: "fetched", bytes, program } as const) : ({ kind: "dropped" } as const);
    }
    const lease = await this.catalog.tryLease(pkey, this.leaseMs);
    if (lease.held) return { kind: "leased", token: lease.token, tookOverFrom: lease.tookOverFrom } as const;
    return { kind: "held", holder: lease.holder } as const;
  }

  async #withoutFleet<E>(build: () => Promise<Built<E>>, label: string, e: unknown): Promise<Obtained<E>> {
    this.counters.unavailable++;
    this.warn({
      kind: "fleet-unavailable",
      code: "UNAVAILABLE",
      message: `the fleet cache (${this.where}) failed for ${label} (${(e as Error).message}); compiling it here without the fleet`,
    });
    return { kind: "built", built: await build(), published: false };
  }

  /** Forgets a program whose blob passed its checks but that the backend refused to load. */
  async drop(program: CatalogProgram, why: string, label: string): Promise<void> {
    this.counters.badBlobs++;
    this.warn({
      kind: "fleet-bad-blob",
      code: "CACHE_CORRUPT",
      message: `fleet program ${program.blob} for ${label} was refused (${why}); dropped from the catalog, recompiling`,
      path: program.blob,
      reason: why,
    });
    try {
      if (await this.catalog.dropProgram(program.key, program.blobSha256)) await this.store.delete(program.blob);
    } catch {
      /* the next reader finds it bad again and drops it then */
    }
  }

  async close(): Promise<void> {
    await this.catalog.conn.close();
  }

  /** The blob's bytes if they are the program the catalog names; else drops it and returns null. */
  async #fetch(program: CatalogProgram, check: EntryCheck, label: string): Promise<Uint8Array | null> {
    const bytes = await this.store.get(program.blob);
    let why: string | null;
    // The entry's own checksums (header, and payload: nearly all of the blob) prove it intact,
    // so the blob is not hashed a second time against the catalog's sha256 here; that sha256
    // names the blob and is what an audit of the store compares.
    if (!bytes) why = "missing from the store";
    else if (bytes.length !== Number(program.sizeBytes))
      why = `size ${bytes.length}, catalog says ${program.sizeBytes}`;
    else why = check(bytes);
    if (!why) {
      this.counters.fetches++;
      return bytes;
    }
    await this.drop(program, why, label);
    return null;
  }

  /**
   * Compiles under a held lease and publishes. Returns null when the program turned out to be
   * published already (the caller looks again). Compile errors propagate (the lease is let go,
   * so another worker tries); a failing store or catalog leaves the program served unpublished.
   */
  async #buildUnderLease<E>(
    key: EntryKey,
    pkey: string,
    token: string,
    tookOverFrom: string | null,
    build: () => Promise<Built<E>>,
    label: string,
  ): Promise<Obtained<E> | null> {
    if (tookOverFrom) {
      this.counters.takeovers++;
      this.warn({
        kind: "stale-lock",
        code: "UNAVAILABLE",
        message: `took over the lapsed compile lease of ${label} from ${tookOverFrom}`,
        reason: "lease-lapsed",
      });
    }
    const beat = this.#heartbeat(pkey, token, label);
    try {
      try {
        // Published between our look and the lease: load that instead of compiling again.
        if (await this.catalog.program(pkey)) return null;
        await this.catalog.compileStarted(pkey, token);
      } catch (e) {
        return await this.#withoutFleet(build, label, e);
      }
      const built = await build();
      try {
        const blobSha256 = sha256Hex(built.bytes);
        const blob = blobName(key, blobSha256);
        await this.store.put(blob, built.bytes);
        await this.catalog.publish({
          key: pkey,
          partition: key.partition,
          entry: key.entry,
          blob,
          blobSha256,
          sizeBytes: built.bytes.length,
          compileMs: built.compileMs,
        });
        await this.catalog.compileFinished(token, built.compileMs);
      } catch (e) {
        this.counters.unavailable++;
        this.warn({
          kind: "fleet-unavailable",
          code: "UNAVAILABLE",
          message: `could not publish ${label} to the fleet cache (${this.where}): ${(e as Error).message}`,
        });
        return { kind: "built", built, published: false };
      }
      this.counters.publishes++;
      return { kind: "built", built, published: true };
    } finally {
      clearInterval(beat);
      await this.catalog.release(pkey, token).catch(() => {});
    }
  }

  /** Renews the lease every third of its length while the compile runs. */
  #heartbeat(pkey: string, token: string, label: string): ReturnType<typeof setInterval> {
    let lost = false;
    const beat = setInterval(
      () => {
        this.catalog.renew(pkey, token, this.leaseMs).then(
          (ok) => {
            if (ok || lost) return;
            lost = true;
            this.warn({
              kind: "fleet-unavailable",
              code: "UNAVAILABLE",
              message: `lost the compile lease of ${label}: it lapsed before a renewal reached the catalog`,
            });
          },
          () => {},
        );
      },
      Math.max(20, Math.floor(this.leaseMs / 3)),
    );
    beat.unref?.();
    return beat;
  }
}

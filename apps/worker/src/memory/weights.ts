import type { DeviceBuffer, Logger } from "@xlaserve/core";
import { type Residency, type WeightBudget, formatBytes } from "./budget.ts";

/**
 * Weight residency (issue 7; ReactantServer's runtime/weight_cache.jl):
 * - pinned: uploaded at load, resident for the model's lifetime, outside the LRU budget;
 * - device: resident while the on-demand budget allows, evicted least-recently-used (never while
 *   a request uses it); an evicted model's weights come back on its next request;
 * - host: uploaded for each request and freed after it.
 */
export interface WeightOwner {
  /** Unique per loaded model instance (a reload is a new owner). */
  readonly id: string;
  readonly name: string;
  readonly bytes: number;
  readonly residency: Residency;
  /** Copies the model's weights to the device, in argument order. */
  upload(): Promise<DeviceBuffer[]>;
}

export interface WeightLease {
  readonly buffers: readonly DeviceBuffer[];
  release(): void;
}

export interface WeightEvents {
  onLoad?(name: string, bytes: number, seconds: number): void;
  onEvict?(name: string, bytes: number): void;
}

interface Entry {
  readonly owner: WeightOwner;
  buffers: DeviceBuffer[] | null;
  loading: Promise<DeviceBuffer[]> | null;
  inUse: number;
  lastUse: number;
  loads: number;
  evicts: number;
  /** Counted in `residentOnDemandBytes` (device residency, resident or being loaded). */
  counted: boolean;
}

export interface WeightState {
  readonly residency: Residency;
  readonly resident: boolean;
  readonly bytes: number;
  readonly loads: number;
  readonly evicts: number;
  readonly inUse: number;
}

export class WeightManager {
  private readonly entries = new Map<string, Entry>();
  private budget: WeightBudget | null = null;
  private tick = 0;
  /** Device-residency weights resident now (the LRU-managed bytes). */
  residentOnDemandBytes = 0;
  pinnedBytes = 0;
  loads = 0;
  evicts = 0;
  loadSeconds = 0;
  /** Wall time of the last on-demand load (ms), for the benchmark. */
  lastLoadMs = 0;

  constructor(
    private readonly log: Logger,
    private readonly events: WeightEvents = {},
  ) {}

  setBudget(budget: WeightBudget): void {
    this.budget = budget;
    this.enforce();
  }

  get onDemandBudgetBytes(): number {
    return this.budget?.onDemandBytes ?? Number.POSITIVE_INFINITY;
  }

  /** Every device-resident weight byte (pinned + on-demand). */
  get residentBytes(): number {
    return this.pinnedBytes + this.residentOnDemandBytes;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** Registers a model; pinned weights are uploaded now. */
  async register(owner: WeightOwner, initialBuffers?: DeviceBuffer[]): Promise<void> {
    const entry: Entry = {
      owner,
      buffers: null,
      loading: null,
      inUse: 0,
      lastUse: ++this.tick,
      loads: 0,
      evicts: 0,
      counted: false,
    };
    this.entries.set(owner.id, entry);
    if (owner.residency === "pinned") {
      entry.buffers = initialBuffers ?? (await owner.upload());
      this.pinnedBytes += owner.bytes;
    } else if (owner.residency === "device" && initialBuffers) {
      entry.buffers = initialBuffers;
      entry.counted = true;
      this.residentOnDemandBytes += owner.bytes;
      this.enforce();
    } else if (initialBuffers) {
      for (const b of initialBuffers) b.dispose();
    }
  }

  /** Frees a model's weights (callers drain its requests first). */
  unregister(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    if (entry.owner.residency === "pinned" && entry.buffers) this.pinnedBytes -= entry.owner.bytes;
    if (entry.counted) this.residentOnDemandBytes -= entry.owner.bytes;
    entry.counted = false;
    if (entry.buffers) for (const b of entry.buffers) b.dispose();
    entry.buffers = null;
  }

  state(id: string): WeightState | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    return {
      residency: e.owner.residency,
      resident: e.buffers !== null,
      bytes: e.owner.bytes,
      loads: e.loads,
      evicts: e.evicts,
      inUse: e.inUse,
    };
  }

  /** Names of device-residency models resident now, least recently used first. */
  lruOrder(): string[] {
    return [...this.entries.values()]
      .filter((e) => e.owner.residency === "device" && e.buffers)
      .sort((a, b) => a.lastUse - b.lastUse)
      .map((e) => e.owner.name);
  }

  /** Makes the model's weights resident (loading them when evicted) and holds them for one run. */
  async acquire(id: string): Promise<WeightLease> {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(`weights of ${id} are not registered`);
    entry.inUse++;
    entry.lastUse = ++this.tick;
    try {
      if (entry.owner.residency === "host") {
        const buffers = await this.load(entry);
        return this.lease(entry, buffers, true);
      }
      if (entry.buffers) return this.lease(entry, entry.buffers, false);
      if (!entry.loading) {
        if (entry.owner.residency === "device") {
          this.makeRoom(entry.owner.bytes, entry);
          entry.counted = true;
          this.residentOnDemandBytes += entry.owner.bytes;
        }
        entry.loading = this.load(entry).then(
          (buffers) => {
            entry.loading = null;
            if (!this.entries.has(id)) {
              for (const b of buffers) b.dispose();
              throw new Error(`weights of ${id} were unregistered while loading`);
            }
            entry.buffers = buffers;
            return buffers;
          },
          (err) => {
            entry.loading = null;
            if (entry.counted) {
              entry.counted = false;
              this.residentOnDemandBytes -= entry.owner.bytes;
            }
            throw err;
          },
        );
      }
      const buffers = await entry.loading;
      return this.lease(entry, buffers, false);
    } catch (err) {
      entry.inUse--;
      throw err;
    }
  }

  /**
   * acquire() when it would not wait: the lease on resident weights, counted as a use (LRU order,
   * in use until released) the same way; null when they must be loaded first (or per request,
   * for host residency). An inline run (inline-runs.ts) takes it so it never yields.
   */
  leaseIfResident(id: string): WeightLease | null {
    const entry = this.entries.get(id);
    if (!entry?.buffers || entry.owner.residency === "host") return null;
    entry.inUse++;
    entry.lastUse = ++this.tick;
    return this.lease(entry, entry.buffers, false);
  }

  private lease(entry: Entry, buffers: DeviceBuffer[], transient: boolean): WeightLease {
    let released = false;
    return {
      buffers,
      release: () => {
        if (released) return;
        released = true;
        entry.inUse--;
        if (transient) for (const b of buffers) b.dispose();
        this.enforce();
      },
    };
  }

  private async load(entry: Entry): Promise<DeviceBuffer[]> {
    const t0 = performance.now();
    const buffers = await entry.owner.upload();
    const ms = performance.now() - t0;
    entry.loads++;
    this.loads++;
    this.loadSeconds += ms / 1000;
    this.lastLoadMs = ms;
    this.events.onLoad?.(entry.owner.name, entry.owner.bytes, ms / 1000);
    this.log.debug("weights loaded", {
      model: entry.owner.name,
      residency: entry.owner.residency,
      bytes: entry.owner.bytes,
      ms: Math.round(ms * 100) / 100,
    });
    return buffers;
  }

  /** Evicts least-recently-used idle device-residency weights until `need` more bytes fit. */
  private makeRoom(need: number, except: Entry | null): void {
    const budget = this.onDemandBudgetBytes;
    if (this.residentOnDemandBytes + need <= budget) return;
    const victims = [...this.entries.values()]
      .filter((e) => e !== except && e.owner.residency === "device" && e.buffers && e.inUse === 0 && !e.loading)
      .sort((a, b) => a.lastUse - b.lastUse);
    for (const v of victims) {
      if (this.residentOnDemandBytes + need <= budget) break;
      this.evict(v);
    }
    if (this.residentOnDemandBytes + need > budget && need > 0) {
      this.log.debug("weight budget exceeded while weights are in use; loading anyway", {
        need,
        resident: this.residentOnDemandBytes,
        budget,
      });
    }
  }

  private evict(entry: Entry): void {
    if (!entry.buffers) return;
    for (const b of entry.buffers) b.dispose();
    entry.buffers = null;
    if (entry.counted) {
      entry.counted = false;
      this.residentOnDemandBytes -= entry.owner.bytes;
    }
    entry.evicts++;
    this.evicts++;
    this.events.onEvict?.(entry.owner.name, entry.owner.bytes);
    this.log.info("weights evicted", {
      model: entry.owner.name,
      bytes: entry.owner.bytes,
      size: formatBytes(entry.owner.bytes),
      residentOnDemandBytes: this.residentOnDemandBytes,
      onDemandBudgetBytes: this.onDemandBudgetBytes,
    });
  }

  /** Evicts LRU idle weights while the on-demand bytes exceed the budget (after a re-resolution). */
  enforce(): void {
    if (this.residentOnDemandBytes > this.onDemandBudgetBytes) this.makeRoom(0, null);
  }

  /** Test and admin hook: evicts one model's device-residency weights now when idle. */
  evictNow(id: string): boolean {
    const e = this.entries.get(id);
    if (e?.owner.residency !== "device" || !e.buffers || e.inUse > 0) return false;
    this.evict(e);
    return true;
  }
}

import type { ModelRegistryView, ServedModel } from "../contract.ts";
import type { Metrics } from "../metrics/metrics.ts";

/** One sample of the worker's figures, for the status page's charts. */
export interface StatusPoint {
  /** Milliseconds since the epoch. */
  readonly t: number;
  /** Per model: requests answered since the previous sample and their mean latency (ms), or null without any. */
  readonly models: Readonly<Record<string, { readonly requests: number; readonly ms: number | null }>>;
  /** The program cache's hits and misses so far (every model). */
  readonly cacheHits: number;
  readonly cacheMisses: number;
}

export interface StatusEvent {
  readonly t: number;
  readonly kind: "loaded" | "reloaded" | "unloaded" | "failed" | "errors";
  readonly model: string;
  readonly text: string;
}

/** How often the page's series are sampled, and how far back they go (15 minutes). */
export const SAMPLE_MS = 5_000;
const KEEP_POINTS = 180;
const KEEP_EVENTS = 50;

/**
 * The recent past the status page shows: figures sampled every few seconds (and on each look),
 * and events found by comparing what is served from one sample to the next (a new model version
 * object is a reload; a state change with its reason; failed requests).
 */
export class StatusHistory {
  readonly points: StatusPoint[] = [];
  readonly events: StatusEvent[] = [];
  private readonly last = new Map<string, { count: number; ns: number; fails: number }>();
  private readonly served = new Map<string, { model: ServedModel | undefined; state: string; reason: string }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private seeded = false;

  constructor(
    private readonly registry: ModelRegistryView,
    private readonly metrics: Metrics,
  ) {}

  /** Samples in the background from now on (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
    (this.timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Takes a sample now, unless the last one is under a second old. */
  async sample(now = Date.now()): Promise<void> {
    const previous = this.points.at(-1);
    if (previous && now - previous.t < 1000) return;
    this.noteChanges(now);
    const models: Record<string, { requests: number; ms: number | null }> = {};
    for (const entry of this.registry.repositoryIndex()) {
      const figures = this.metrics.requestBook.get(entry.name);
      if (!figures) continue;
      const count = figures.success.count + figures.fail.count;
      const ns = figures.success.ns + figures.fail.ns;
      const before = this.last.get(entry.name) ?? { count: 0, ns: 0, fails: 0 };
      const requests = count - before.count;
      models[entry.name] = { requests, ms: requests > 0 ? (ns - before.ns) / requests / 1e6 : null };
      const newFails = figures.fail.count - before.fails;
      if (newFails > 0 && this.seeded) {
        const last = figures.lastError;
        const text = `${newFails} failed request${newFails === 1 ? "" : "s"}`;
        this.event(now, "errors", entry.name, last ? `${text}, the last: ${last.status} ${last.message}` : text);
      }
      this.last.set(entry.name, { count, ns, fails: figures.fail.count });
    }
    this.points.push({
      t: now,
      models,
      cacheHits: await counterTotal(this.metrics.cacheHits),
      cacheMisses: await counterTotal(this.metrics.cacheMisses),
    });
    if (this.points.length > KEEP_POINTS) this.points.splice(0, this.points.length - KEEP_POINTS);
    this.seeded = true;
  }

  private noteChanges(now: number): void {
    const seen = new Set<string>();
    for (const entry of this.registry.repositoryIndex()) {
      seen.add(entry.name);
      const model = this.registry.getModel(entry.name);
      const before = this.served.get(entry.name);
      this.served.set(entry.name, { model, state: entry.state, reason: entry.reason });
      if (!before) {
        // What was there at the first look is the starting point, not news, unless it failed.
        if (entry.state === "UNAVAILABLE" && entry.reason) this.event(now, "failed", entry.name, entry.reason);
        else if (this.seeded && model) this.event(now, "loaded", entry.name, loadText("serving", model));
        continue;
      }
      if (model && before.model && model !== before.model)
        this.event(now, "reloaded", entry.name, loadText("new version serving", model));
      else if (model && !before.model) this.event(now, "loaded", entry.name, loadText("serving", model));
      if (entry.reason !== before.reason && entry.reason) {
        const kind = entry.state === "UNAVAILABLE" && entry.reason !== "unloaded" ? "failed" : "unloaded";
        this.event(now, entry.reason.startsWith("reload failed") ? "failed" : kind, entry.name, entry.reason);
      }
    }
    for (const name of this.served.keys()) {
      if (!seen.has(name)) {
        this.served.delete(name);
        this.event(now, "unloaded", name, "removed from the repository");
      }
    }
  }

  private event(t: number, kind: StatusEvent["kind"], model: string, text: string): void {
    this.events.push({ t, kind, model, text });
    if (this.events.length > KEEP_EVENTS) this.events.splice(0, this.events.length - KEEP_EVENTS);
  }
}

/**
 * What a load did, from the model's extra figures where the registry gives them: its generation,
 * load time and how many programs came from the program cache.
 */
function loadText(what: string, model: ServedModel): string {
  const x = model.extra() as { generation?: unknown; loadMs?: unknown; programs?: unknown };
  const parts: string[] = [];
  if (typeof x.generation === "number") parts.push(`generation ${x.generation}`);
  if (typeof x.loadMs === "number") parts.push(`loaded in ${Math.round(x.loadMs)} ms`);
  if (Array.isArray(x.programs) && x.programs.length > 0) {
    const hits = x.programs.filter((p) => (p as { outcome?: unknown })?.outcome === "hit").length;
    parts.push(`${hits} of ${x.programs.length} programs from the cache`);
  }
  return parts.length > 0 ? `${what}: ${parts.join(", ")}` : what;
}

async function counterTotal(counter: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  const { values } = await counter.get();
  return values.reduce((a, v) => a + v.value, 0);
}

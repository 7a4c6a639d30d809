import type { ModelRegistryView } from "../contract.ts";
import { type ReadinessMode, readinessOf } from "../health/readiness.ts";
import type { StatusEvent, StatusHistory, StatusPoint } from "./history.ts";

/** What the status page shows, as JSON (GET /status.json; the page renders it, then polls it). */
export interface StatusSnapshot {
  readonly t: number;
  readonly name: string;
  readonly version: string;
  readonly engine: string;
  readonly engineReason: string;
  readonly device: string;
  readonly ready: boolean;
  readonly readyReason: string;
  readonly models: readonly StatusModel[];
  readonly budget: StatusBudget | null;
  readonly cache: { readonly hits: number; readonly misses: number };
  readonly points: readonly StatusPoint[];
  readonly events: readonly StatusEvent[];
}

export interface StatusModel {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
  readonly residency: string | null;
  readonly resident: boolean | null;
  readonly weightBytes: number | null;
  readonly scratchBytes: number | null;
  readonly requests: number;
  readonly failures: number;
}

export interface StatusBudget {
  readonly limitBytes: number;
  readonly poolBytes: number;
  readonly pinnedBytes: number;
  readonly onDemandBytes: number;
  readonly residentOnDemandBytes: number;
  readonly maxScratchBytes: number;
}

export async function statusSnapshot(
  registry: ModelRegistryView,
  history: StatusHistory,
  readiness: ReadinessMode,
  requests: (model: string) => { success: number; fail: number },
): Promise<StatusSnapshot> {
  await history.sample();
  const info = registry.serverInfo();
  const extra = info.extra as Record<string, unknown>;
  const device = extra.device as { deviceKind?: string; platform?: string } | string | undefined;
  const ready = readinessOf(registry, readiness);
  const last = history.points.at(-1);
  return {
    t: Date.now(),
    name: info.name,
    version: info.version,
    engine: String(extra.engine ?? "unknown"),
    engineReason: String(extra.engineReason ?? extra.engine_reason ?? ""),
    device:
      typeof device === "string"
        ? device
        : [...new Set([device?.deviceKind, device?.platform].filter(Boolean))].join(" on "),
    ready: ready.ready,
    readyReason: ready.error ?? "",
    models: registry.repositoryIndex().map((e) => {
      const x = (e.extra ?? {}) as Record<string, unknown>;
      const counts = requests(e.name);
      return {
        name: e.name,
        version: e.version,
        state: e.state,
        reason: e.reason,
        residency: typeof x.residency === "string" ? x.residency : null,
        resident: typeof x.resident === "boolean" ? x.resident : null,
        weightBytes: typeof x.weightBytes === "number" ? x.weightBytes : null,
        scratchBytes: typeof x.scratchBytes === "number" ? x.scratchBytes : null,
        requests: counts.success + counts.fail,
        failures: counts.fail,
      };
    }),
    budget: (extra.budget as StatusBudget | null | undefined) ?? null,
    cache: { hits: last?.cacheHits ?? 0, misses: last?.cacheMisses ?? 0 },
    points: history.points,
    events: history.events,
  };
}

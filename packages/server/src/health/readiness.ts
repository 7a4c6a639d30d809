import type { ModelRegistryView, RepositoryEntry } from "../contract.ts";

export type ReadinessMode = "strict" | "lenient";

/** Reasons the registry gives models taken out on purpose (an unload call, a removed folder). */
const DELIBERATELY_OUT = new Set(["unloaded", "removed"]);

/** A model taken out on purpose: it does not hold readiness back, and asking for it is 404. */
export function isDeliberatelyOut(entry: Pick<RepositoryEntry, "state" | "reason">): boolean {
  return entry.state !== "READY" && DELIBERATELY_OUT.has(entry.reason);
}

export interface NotReadyModel {
  readonly name: string;
  readonly state: string;
  readonly reason: string;
}

export interface Readiness {
  readonly ready: boolean;
  /** Why not, in one sentence naming the models; absent when ready. */
  readonly error?: string;
  readonly notReady: readonly NotReadyModel[];
}

/**
 * Whether a load balancer should send this worker traffic. Never while it starts or drains, never
 * while no model serves (it could answer nothing). Strict (Triton's strict readiness): also not
 * while any model that should serve does not (a failed load, a load still running); a model
 * unloaded on purpose does not count. Lenient: ready while at least one model serves.
 */
export function readinessOf(
  registry: Pick<ModelRegistryView, "isReady" | "repositoryIndex" | "isShuttingDown">,
  mode: ReadinessMode,
): Readiness {
  if (!registry.isReady()) {
    const error = registry.isShuttingDown?.()
      ? "the worker is shutting down"
      : "the worker is starting: the startup loads are still running";
    return { ready: false, error, notReady: [] };
  }
  const entries = registry.repositoryIndex();
  const serving = entries.filter((e) => e.state === "READY");
  const notReady = entries.filter((e) => e.state !== "READY" && !isDeliberatelyOut(e)).map(describe);
  if (serving.length === 0) {
    const error =
      notReady.length === 0
        ? "no model to serve: the model repository holds no bundle (or every model was unloaded)"
        : `no model is serving: ${list(notReady)}`;
    return { ready: false, error, notReady };
  }
  if (mode === "strict" && notReady.length > 0) {
    const of = `${notReady.length} of ${serving.length + notReady.length} models`;
    return {
      ready: false,
      error: `${of} not ready (strict readiness; server.readiness: lenient is ready while any model serves): ${list(notReady)}`,
      notReady,
    };
  }
  return { ready: true, notReady };
}

function describe(e: RepositoryEntry): NotReadyModel {
  return { name: e.name, state: e.state, reason: e.reason };
}

function list(models: readonly NotReadyModel[]): string {
  return models.map((m) => `${m.name} ${m.state}${m.reason ? ` (${m.reason})` : ""}`).join("; ");
}

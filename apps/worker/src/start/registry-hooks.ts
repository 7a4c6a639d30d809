import type { Metrics } from "@xlaserve/server";
import type { RegistryHooks } from "../repository/registry.ts";
import type { WorkerGauges } from "./worker-gauges.ts";

/** The registry's events as metrics: compute time, weight loads and cache outcomes. */
export function registryHooks(metrics: Metrics, extra: WorkerGauges): RegistryHooks {
  return {
    computeSeconds: (model, s) => metrics.addComputeSeconds(model, s),
    weightLoad: (model, _bytes, s) => {
      metrics.weightLoads.inc({ model });
      extra.weightLoadSeconds.inc({ model }, s);
      // Evictions at 0 from the first load on, so a rate of them exists before the first one.
      metrics.weightEvicts.inc({ model }, 0);
    },
    weightEvict: (model) => metrics.weightEvicts.inc({ model }),
    programLoaded: (model, p) => {
      // Every model has all four series, at 0 until they count (a hit ratio needs both sides).
      for (const c of [metrics.cacheHits, metrics.cacheLoads, metrics.cacheMisses, metrics.cacheCompiles]) {
        c.inc({ model }, 0);
      }
      if (p.outcome === "hit") {
        metrics.cacheHits.inc({ model });
        metrics.cacheLoads.inc({ model });
      } else if (p.outcome === "miss" || p.outcome === "recompiled") {
        metrics.cacheMisses.inc({ model });
        metrics.cacheCompiles.inc({ model });
      }
    },
  };
}

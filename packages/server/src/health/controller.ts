import { Elysia } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { LiveBody, ReadyBody } from "./model.ts";
import { type ReadinessMode, readinessOf } from "./readiness.ts";

/**
 * Health: the status code is the answer (KServe v2 / Triton clients test for 200); the body
 * repeats it for people and for clients that read {"live"} / {"ready"}, with the reason when not.
 */
export function healthController(registry: ModelRegistryView, mode: ReadinessMode = "strict") {
  return new Elysia({ name: "xlaserve.health" })
    .get(
      "/v2/health/live",
      ({ set }) => {
        const live = registry.isLive();
        if (!live) set.status = 503;
        return { live };
      },
      { response: { 200: LiveBody, 503: LiveBody }, detail: { summary: "Server liveness", tags: ["health"] } },
    )
    .get(
      "/v2/health/ready",
      ({ set }) => {
        const r = readinessOf(registry, mode);
        if (r.ready) return { ready: true };
        set.status = 503;
        return { ready: false, error: r.error, not_ready: [...r.notReady] };
      },
      {
        response: { 200: ReadyBody, 503: ReadyBody },
        detail: {
          summary: "Server readiness: every model serves (strict) or at least one does (lenient)",
          tags: ["health"],
        },
      },
    );
}

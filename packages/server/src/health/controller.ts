import { Elysia } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { LiveBody, ReadyBody } from "./model.ts";

/**
 * Health: the status code is the answer (KServe v2 / Triton clients test for 200); the body
 * repeats it for people and for clients that read {"live"} / {"ready"}.
 */
export function healthController(registry: ModelRegistryView) {
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
        if (registry.isReady()) return { ready: true };
        set.status = 503;
        return { ready: false, error: "the worker is not ready (models loading or draining)" };
      },
      { response: { 200: ReadyBody, 503: ReadyBody }, detail: { summary: "Server readiness", tags: ["health"] } },
    );
}

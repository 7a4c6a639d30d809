import { Elysia, t } from "elysia";
import type { Metrics } from "./metrics.ts";

/** GET /metrics: Prometheus text exposition. */
export function metricsController(metrics: Metrics) {
  return new Elysia({ name: "xlaserve.metrics" }).get(
    "/metrics",
    async () =>
      new Response(await metrics.text(), {
        headers: { "content-type": metrics.contentType },
      }),
    {
      response: { 200: t.String({ description: "Prometheus text format 0.0.4" }) },
      detail: { summary: "Prometheus metrics", tags: ["metrics"] },
    },
  );
}

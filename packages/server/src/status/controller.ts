import { Elysia, t } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import type { ReadinessMode } from "../health/readiness.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { StatusHistory } from "./history.ts";
import { statusPage } from "./page.ts";
import { statusSnapshot } from "./snapshot.ts";

/** GET / (the status page for a person) and GET /status.json (what it shows, which it polls). */
export function statusController(registry: ModelRegistryView, metrics: Metrics, readiness: ReadinessMode) {
  const history = new StatusHistory(registry, metrics);
  history.start();
  const requests = (model: string) => {
    const e = metrics.requestBook.get(model);
    return { success: e?.success.count ?? 0, fail: e?.fail.count ?? 0 };
  };
  const snapshot = () => statusSnapshot(registry, history, readiness, requests);
  const tags = ["status"];
  return new Elysia({ name: "xlaserve.status" })
    .get(
      "/",
      async () =>
        new Response(statusPage(await snapshot()), {
          headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
        }),
      {
        response: { 200: t.String({ description: "HTML" }) },
        detail: { summary: "Status page: models, engine, memory budget, cache and latency charts, events", tags },
      },
    )
    .get("/status.json", async () => snapshot(), {
      detail: { summary: "What the status page shows, as JSON", tags },
    });
}

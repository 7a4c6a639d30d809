import { Elysia } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { ErrorBody, ModelParams, ModelVersionParams } from "../infer/model.ts";
import { findModel } from "../metadata/service.ts";
import { StatisticsResponse } from "./model.ts";
import type { RequestBook } from "./request-book.ts";
import { allStatistics, modelStatistics } from "./service.ts";

/** The statistics extension: GET /v2/models/stats and per model / version. */
export function statsController(registry: ModelRegistryView, book: RequestBook) {
  const tags = ["statistics"];
  const response = { 200: StatisticsResponse, 404: ErrorBody };
  return new Elysia({ name: "xlaserve.stats" })
    .get("/v2/models/stats", () => allStatistics(registry, book), {
      response,
      detail: { summary: "Statistics of every served model", tags },
    })
    .get(
      "/v2/models/:model/stats",
      ({ params }) => ({ model_stats: [modelStatistics(findModel(registry, params.model), book)] }),
      { params: ModelParams, response, detail: { summary: "Statistics of one model", tags } },
    )
    .get(
      "/v2/models/:model/versions/:version/stats",
      ({ params }) => ({ model_stats: [modelStatistics(findModel(registry, params.model, params.version), book)] }),
      { params: ModelVersionParams, response, detail: { summary: "Statistics of one model version", tags } },
    );
}

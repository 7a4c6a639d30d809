import { Elysia } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { ErrorBody, ModelParams, ModelVersionParams } from "../infer/model.ts";
import { ModelConfig, ModelMetadata, ModelReady, ServerMetadata } from "./model.ts";
import { findModel, modelConfig, modelMetadata, serverMetadata } from "./service.ts";

/** GET /v2 and the per-model metadata and readiness routes. */
export function metadataController(registry: ModelRegistryView) {
  const ready = (name: string, version: string | undefined, set: { status?: number | string }) => {
    const model = findModel(registry, name, version);
    if (model.ready()) return { name: model.name, ready: true };
    set.status = 503;
    return { name: model.name, ready: false, error: `model "${model.name}" is not ready` };
  };
  const tags = ["metadata"];
  return new Elysia({ name: "xlaserve.metadata" })
    .get("/v2", () => serverMetadata(registry), {
      response: { 200: ServerMetadata },
      detail: { summary: "Server metadata", tags },
    })
    .get("/v2/models/:model", ({ params }) => modelMetadata(findModel(registry, params.model)), {
      params: ModelParams,
      response: { 200: ModelMetadata, 404: ErrorBody },
      detail: { summary: "Model metadata", tags },
    })
    .get(
      "/v2/models/:model/versions/:version",
      ({ params }) => modelMetadata(findModel(registry, params.model, params.version)),
      {
        params: ModelVersionParams,
        response: { 200: ModelMetadata, 404: ErrorBody },
        detail: { summary: "Model version metadata", tags },
      },
    )
    .get("/v2/models/:model/config", ({ params }) => modelConfig(findModel(registry, params.model)), {
      params: ModelParams,
      response: { 200: ModelConfig, 404: ErrorBody },
      detail: { summary: "Model configuration (Triton's model configuration extension)", tags },
    })
    .get(
      "/v2/models/:model/versions/:version/config",
      ({ params }) => modelConfig(findModel(registry, params.model, params.version)),
      {
        params: ModelVersionParams,
        response: { 200: ModelConfig, 404: ErrorBody },
        detail: { summary: "Model version configuration", tags },
      },
    )
    .get("/v2/models/:model/ready", ({ params, set }) => ready(params.model, undefined, set), {
      params: ModelParams,
      response: { 200: ModelReady, 503: ModelReady, 404: ErrorBody },
      detail: { summary: "Model readiness", tags },
    })
    .get("/v2/models/:model/versions/:version/ready", ({ params, set }) => ready(params.model, params.version, set), {
      params: ModelVersionParams,
      response: { 200: ModelReady, 503: ModelReady, 404: ErrorBody },
      detail: { summary: "Model version readiness", tags },
    });
}

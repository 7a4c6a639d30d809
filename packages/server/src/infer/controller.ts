import { Elysia } from "elysia";
import { documentedBody } from "../openapi-schema.ts";
import { ErrorBody, InferRequestBody, InferResponseBody, ModelParams, ModelVersionParams } from "./model.ts";
import type { InferService } from "./service.ts";

/**
 * POST /v2/models/{m}[/versions/{v}]/infer. Elysia does not parse the body (`parse: "none"`):
 * the service reads it once, splits off the binary section, then checks the JSON header against
 * the same typebox schema that documents the route here.
 */
export function inferController(service: InferService) {
  const detail = {
    summary: "Run inference (KServe v2, with Triton's binary tensor data extension)",
    tags: ["inference"],
    requestBody: documentedBody(
      "A KServe v2 inference request as JSON, or a JSON header of Inference-Header-Content-Length bytes followed by binary tensor data",
      true,
      { "application/json": InferRequestBody, "application/octet-stream": { type: "string", format: "binary" } },
    ),
  };
  const response = {
    200: InferResponseBody,
    400: ErrorBody,
    404: ErrorBody,
    413: ErrorBody,
    429: ErrorBody,
    503: ErrorBody,
  };
  return new Elysia({ name: "xlaserve.infer" })
    .post("/v2/models/:model/infer", ({ request, params }) => service.handle(request, params.model, undefined), {
      parse: "none",
      params: ModelParams,
      response,
      detail,
    })
    .post(
      "/v2/models/:model/versions/:version/infer",
      ({ request, params }) => service.handle(request, params.model, params.version),
      { parse: "none", params: ModelVersionParams, response, detail },
    );
}

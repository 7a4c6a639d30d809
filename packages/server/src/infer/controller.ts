import type { BunRequest } from "bun";
import { Elysia } from "elysia";
import { documentedBody } from "../openapi-schema.ts";
import { ErrorBody, InferRequestBody, InferResponseBody, ModelParams, ModelVersionParams } from "./model.ts";
import type { InferService } from "./service.ts";

export const INFER_PATH = "/v2/models/:model/infer";
export const INFER_VERSION_PATH = "/v2/models/:model/versions/:version/infer";

/**
 * The infer routes for Bun.serve's native `routes` table, in place of the handler Elysia maps
 * there for the same paths. The service already answers every request itself (errors, metrics,
 * log line), so Elysia's per-request context, params check and response mapping add nothing but
 * time (a few us of the route's ~30 us CPU in bench/http.bench.ts --target http-only). Bun decodes
 * the params just as it does for Elysia's mapped routes; the Elysia routes below stay for the
 * OpenAPI document and for whatever reaches app.fetch (app.handle, a trailing slash).
 */
export function inferRoutes(service: InferService) {
  return {
    [INFER_PATH]: {
      POST: (request: BunRequest) => service.handle(request, request.params.model as string, undefined),
    },
    [INFER_VERSION_PATH]: {
      POST: (request: BunRequest) => service.handle(request, request.params.model as string, request.params.version),
    },
  };
}

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
    .post(INFER_PATH, ({ request, params }) => service.handle(request, params.model, undefined), {
      parse: "none",
      params: ModelParams,
      response,
      detail,
    })
    .post(INFER_VERSION_PATH, ({ request, params }) => service.handle(request, params.model, params.version), {
      parse: "none",
      params: ModelVersionParams,
      response,
      detail,
    });
}

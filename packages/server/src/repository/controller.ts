import { Elysia, t } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { ErrorBody, ModelParams } from "../infer/model.ts";
import type { Logger } from "@xlaserve/core";
import { optionalJsonBody } from "../json-body.ts";
import { documentedBody } from "../openapi-schema.ts";
import { requireBearer } from "./auth.ts";
import { changeModel, repositoryIndex } from "./service.ts";
import { IndexRequest, IndexResponse, LoadRequest } from "./model.ts";

/** The model repository extension: index, load, unload. */
export function repositoryController(
  registry: ModelRegistryView,
  limits: { readonly authToken: string | undefined; readonly maxBodyBytes: number },
  logger: Logger,
) {
  const { authToken, maxBodyBytes } = limits;
  const readIndex = optionalJsonBody(IndexRequest, maxBodyBytes);
  const readLoad = optionalJsonBody(LoadRequest, maxBodyBytes);
  const tags = ["repository"];
  const adminResponse = { 200: t.Void(), 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
  const change = async (request: Request, name: string, action: "load" | "unload") => {
    requireBearer(authToken, request.headers.get("authorization"));
    const body = await readLoad(request);
    await changeModel(registry, logger, name, action, Object.keys(body?.parameters ?? {}));
    return new Response(null, { status: 200 });
  };
  return new Elysia({ name: "xlaserve.repository" })
    .post(
      "/v2/repository/index",
      async ({ request }) => {
        const body = await readIndex(request);
        return repositoryIndex(registry, body?.ready === true);
      },
      {
        parse: "none",
        response: { 200: IndexResponse, 400: ErrorBody },
        detail: {
          summary: "Repository index: every bundle with its state and the reason it is not ready",
          tags,
          requestBody: documentedBody("optional filter", false, { "application/json": IndexRequest }),
        },
      },
    )
    .post("/v2/repository/models/:model/load", ({ request, params }) => change(request, params.model, "load"), {
      parse: "none",
      params: ModelParams,
      response: adminResponse,
      detail: {
        summary: "Load or reload a bundle (needs the bearer token)",
        tags,
        requestBody: documentedBody("optional parameters", false, { "application/json": LoadRequest }),
      },
    })
    .post("/v2/repository/models/:model/unload", ({ request, params }) => change(request, params.model, "unload"), {
      parse: "none",
      params: ModelParams,
      response: adminResponse,
      detail: {
        summary: "Unload a model after draining it (needs the bearer token)",
        tags,
        requestBody: documentedBody("optional parameters", false, { "application/json": LoadRequest }),
      },
    });
}

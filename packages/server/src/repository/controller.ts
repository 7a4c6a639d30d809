import { Elysia, t } from "elysia";
import type { ModelRegistryView } from "../contract.ts";
import { ErrorBody, ModelParams } from "../infer/model.ts";
import type { Logger } from "@xlaserve/core";
import { badRequest } from "../http-error.ts";
import { optionalJsonBody } from "../json-body.ts";
import { documentedBody } from "../openapi-schema.ts";
import { requireBearer } from "./auth.ts";
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
    // Triton's load can carry a replacement config or model files; a bundle here is only ever
    // read from the repository folder, so those overrides are refused rather than ignored.
    for (const key of Object.keys(body?.parameters ?? {})) {
      if (key === "config" || key.startsWith("file:")) {
        throw badRequest(
          `parameters.${key}: overriding a model's config or files is not supported; change the bundle instead`,
        );
      }
    }
    logger.info(`repository ${action}`, { model: name });
    if (action === "load") await registry.load(name);
    else await registry.unload(name);
    return new Response(null, { status: 200 });
  };
  return new Elysia({ name: "xlaserve.repository" })
    .post(
      "/v2/repository/index",
      async ({ request }) => {
        const body = await readIndex(request);
        const entries = registry.repositoryIndex();
        return body?.ready ? entries.filter((e) => e.state === "READY") : entries;
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

import { Elysia } from "elysia";
import { badRequest } from "../http-error.ts";
import { ErrorBody } from "../infer/model.ts";
import { optionalJsonBody } from "../json-body.ts";
import { documentedBody } from "../openapi-schema.ts";
import { RegionParams, RegisterRequest, StatusResponse } from "./model.ts";
import type { RegionStatus, SharedMemoryRegistry } from "./registry.ts";

function statusBody(regions: readonly RegionStatus[]) {
  return regions.map((r) => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize }));
}

/** Triton's system shared memory extension over REST: v2/systemsharedmemory/... */
export function sharedMemoryController(sharedMemory: SharedMemoryRegistry, maxBodyBytes: number) {
  const readRegister = optionalJsonBody(RegisterRequest, maxBodyBytes);
  const tags = ["shared memory"];
  const ok = () => new Response(null, { status: 200 });
  return new Elysia({ name: "xlaserve.shared-memory" })
    .get("/v2/systemsharedmemory/status", () => statusBody(sharedMemory.status()), {
      response: { 200: StatusResponse },
      detail: { summary: "Every registered system shared-memory region", tags },
    })
    .get("/v2/systemsharedmemory/region/:name/status", ({ params }) => statusBody(sharedMemory.status(params.name)), {
      params: RegionParams,
      response: { 200: StatusResponse, 404: ErrorBody },
      detail: { summary: "One registered region", tags },
    })
    .post(
      "/v2/systemsharedmemory/region/:name/register",
      async ({ request, params }) => {
        const body = await readRegister(request);
        if (!body) throw badRequest('register needs a JSON body {"key", "offset", "byte_size"}');
        sharedMemory.register(params.name, body.key, body.offset ?? 0, body.byte_size);
        return ok();
      },
      {
        parse: "none",
        params: RegionParams,
        response: { 400: ErrorBody },
        detail: {
          summary: "Register a region of a POSIX shared-memory object (key, offset, byte_size)",
          tags,
          requestBody: documentedBody("the region", true, { "application/json": RegisterRequest }),
        },
      },
    )
    .post(
      "/v2/systemsharedmemory/region/:name/unregister",
      ({ params }) => {
        sharedMemory.unregister(params.name);
        return ok();
      },
      { params: RegionParams, detail: { summary: "Unregister one region", tags } },
    )
    .post(
      "/v2/systemsharedmemory/unregister",
      () => {
        sharedMemory.unregister("");
        return ok();
      },
      { detail: { summary: "Unregister every region", tags } },
    );
}

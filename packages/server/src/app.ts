import { openapi } from "@elysiajs/openapi";
import { XlaserveError } from "@xlaserve/core";
import { Elysia } from "elysia";
import type { ServerAppOptions } from "./config.ts";
import { healthController } from "./health/controller.ts";
import { HttpError, clientClosed, statusForCode } from "./http-error.ts";
import { inferController, inferRoutes } from "./infer/controller.ts";
import { InferService } from "./infer/service.ts";
import { metadataController } from "./metadata/controller.ts";
import { metricsController } from "./metrics/controller.ts";
import { registerStatisticsSeries } from "./metrics/statistics-series.ts";
import { repositoryController } from "./repository/controller.ts";
import { sharedMemoryController } from "./shared-memory/controller.ts";
import { SharedMemoryRegistry } from "./shared-memory/registry.ts";
import { statsController } from "./stats/controller.ts";
import { statusController } from "./status/controller.ts";

/**
 * The worker's HTTP API: KServe v2 / Open Inference Protocol with Triton's binary tensor data,
 * model repository, statistics and system shared memory extensions, plus /metrics and an OpenAPI
 * document. Pass the worker's `sharedMemory` registry so that the gRPC service sees the same regions.
 */
export function createServerApp(options: ServerAppOptions) {
  const { registry, logger, config, metrics } = options;
  registerStatisticsSeries(metrics, registry);
  const { maxBodyBytes } = config;
  const sharedMemory = options.sharedMemory ?? new SharedMemoryRegistry();
  const infer = new InferService({ registry, metrics, logger, maxBodyBytes, sharedMemory });
  return new Elysia({
    name: "xlaserve.server",
    // Bun's own limit is only a backstop (its 413 has no JSON body); every route that reads a
    // body enforces maxBodyBytes itself with a message naming the limit.
    // The infer routes go straight to the service through Bun's route table (see inferRoutes);
    // Elysia merges these over the handlers it maps for the same paths.
    serve: { maxRequestBodySize: maxRequestBodySize(maxBodyBytes), routes: inferRoutes(infer) },
  })
    .onError(({ code, error, request }) => {
      const { status, message } = describeError(code, error, request);
      if (status >= 500)
        logger.warn("request failed", { method: request.method, url: request.url, status, error: message });
      return new Response(JSON.stringify({ error: message }), {
        status,
        headers: {
          "content-type": "application/json",
          ...(status === 401 ? { "www-authenticate": 'Bearer realm="xlaserve"' } : {}),
        },
      });
    })
    .use(
      openapi({
        path: "/openapi",
        specPath: "/openapi.json",
        // The UI loads its script from a CDN; the JSON document is what tools consume.
        provider: null,
        documentation: {
          info: {
            title: "xlaserve",
            version: registry.serverInfo().version,
            description: "KServe v2 / Open Inference Protocol over REST for XLA-compiled models",
          },
        },
      }),
    )
    .use(inferController(infer))
    .use(healthController(registry, config.readiness))
    .use(metadataController(registry))
    .use(statsController(registry, metrics.requestBook))
    .use(repositoryController(registry, { authToken: config.authToken, maxBodyBytes }, logger))
    .use(sharedMemoryController(sharedMemory, maxBodyBytes))
    .use(metricsController(metrics))
    .use(statusController(registry, metrics, config.readiness ?? "strict"));
}

export type ServerApp = ReturnType<typeof createServerApp>;

/** Bun's own body limit for a codec limit of `maxBodyBytes` (room for a compressed body's framing). */
export function maxRequestBodySize(maxBodyBytes: number): number {
  return maxBodyBytes * 2 + 1024 * 1024;
}

/** Every failure as a status and a message for {"error": "..."}. */
function describeError(code: unknown, error: unknown, request: Request): { status: number; message: string } {
  // Elysia wraps what a body parser throws; the cause is the real error.
  const unwrapped = code === "PARSE" && error instanceof Error && error.cause !== undefined ? error.cause : error;
  const inner = request.signal.aborted ? clientClosed() : unwrapped;
  if (inner instanceof HttpError) return { status: inner.status, message: inner.message };
  if (inner instanceof XlaserveError) return { status: statusForCode(inner.code), message: inner.message };
  switch (code) {
    case "NOT_FOUND":
      return { status: 404, message: `no route for ${request.method} ${new URL(request.url).pathname}` };
    case "PARSE":
      return { status: 400, message: `request body could not be parsed: ${(inner as Error)?.message ?? inner}` };
    case "VALIDATION": {
      const v = error as { valueError?: { path?: string; message?: string }; customError?: unknown };
      const where = v.valueError?.path ? ` at ${v.valueError.path}` : "";
      return { status: 400, message: `request${where}: ${v.valueError?.message ?? "does not match the schema"}` };
    }
    default: {
      const status =
        typeof (inner as { status?: unknown })?.status === "number" ? (inner as { status: number }).status : 500;
      return { status, message: (inner as Error)?.message ?? String(inner) };
    }
  }
}

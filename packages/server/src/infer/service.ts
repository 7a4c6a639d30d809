import type { Logger } from "@xlaserve/core";
import { XlaserveError, asXlaserveError } from "@xlaserve/core";
import type { ModelRegistryView, ServedModel } from "../contract.ts";
import { findModel } from "../metadata/service.ts";
import { CLIENT_CLOSED, HttpError, clientClosed, errorResponse, statusForCode } from "../http-error.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { readBody } from "../read-body.ts";
import { HEADER_LENGTH, splitBody } from "./body.ts";
import { decodeInferRequest } from "./decode-request.ts";
import { encodeInferResponse } from "./encode-response.ts";
import { checkEnvelope } from "./envelope.ts";

/** Where each answered request is counted (the server's Metrics, or an HTTP thread's tally of it). */
export type RequestCounter = Pick<Metrics, "requestDone">;

export interface InferServiceOptions {
  readonly registry: Pick<ModelRegistryView, "getModel"> &
    Partial<Pick<ModelRegistryView, "isShuttingDown" | "repositoryIndex">>;
  readonly metrics: RequestCounter;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
}

/**
 * One infer request from raw body to Response: every error becomes its {"error"} answer here, so
 * each request is counted, timed and logged exactly once whatever happened to it.
 */
export class InferService {
  constructor(private readonly options: InferServiceOptions) {}

  /**
   * `picked`: a model the caller has already chosen (an HTTP thread's replica, pinned for the
   * whole request so that a swap meanwhile cannot change the model under it); otherwise the
   * registry's model of that name and version.
   */
  async handle(
    request: Request,
    modelName: string,
    version: string | undefined,
    picked?: ServedModel,
  ): Promise<Response> {
    const start = performance.now();
    let label = "_unknown";
    let id: string | undefined;
    let response: Response;
    let failure: string | undefined;
    try {
      const model = picked ?? findModel(this.options.registry, modelName, version);
      label = model.name;
      if (!model.ready()) throw new XlaserveError("UNAVAILABLE", `model "${model.name}" is not ready`);
      const { maxBodyBytes } = this.options;
      const bytes = await readBody(request, maxBodyBytes);
      const split = splitBody(request.headers.get(HEADER_LENGTH), bytes);
      const body = checkEnvelope(split.header);
      id = body.id;
      const decoded = decodeInferRequest(model, body, split.binary, split.headerBytes);
      const results = await model.infer({ id: decoded.id, inputs: decoded.inputs, signal: request.signal });
      response = encodeInferResponse(
        { modelName: model.name, modelVersion: model.version, id: decoded.id },
        decoded.outputs,
        results,
      );
    } catch (error) {
      // Whatever failed once the client hung up (its body read, a run it aborted) is its doing.
      const cause = request.signal.aborted ? clientClosed() : error;
      failure = (cause as Error).message ?? String(cause);
      response = errorResponse(statusOf(cause), failure);
    }
    const seconds = (performance.now() - start) / 1000;
    const { metrics, logger } = this.options;
    const status = String(response.status);
    metrics.requestDone(label, status, seconds);
    if (failure !== undefined && response.status === CLIENT_CLOSED) {
      logger.debug("infer abandoned by the client", { model: modelName, version, ms: round(seconds * 1000), id });
    } else if (failure !== undefined) {
      logger.warn("infer failed", {
        model: modelName,
        version,
        status: response.status,
        ms: round(seconds * 1000),
        id,
        error: failure,
      });
    } else if (logger.level === "debug") {
      logger.debug("infer", { model: modelName, version, status: response.status, ms: round(seconds * 1000), id });
    }
    return response;
  }
}

export function statusOf(error: unknown): number {
  if (error instanceof HttpError) return error.status;
  return statusForCode(asXlaserveError(error).code);
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

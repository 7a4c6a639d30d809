import type { HostTensor, Logger } from "@xlaserve/core";
import { XlaserveError, asXlaserveError, isXlaserveError, noteMovable } from "@xlaserve/core";
import type { CancelFlag, ModelRegistryView, ServedModel } from "../contract.ts";
import { findModel } from "../metadata/service.ts";
import { CLIENT_CLOSED, HttpError, clientClosed, errorResponse, statusForCode } from "../http-error.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { readBody } from "../read-body.ts";
import type { SharedMemoryRegistry } from "../shared-memory/registry.ts";
import { writeSharedOutputs } from "../shared-memory/tensors.ts";
import { HEADER_LENGTH, splitBody } from "./body.ts";
import { type DecodedRequest, type OutputPlan, decodeInferRequest } from "./decode-request.ts";
import { soonest } from "./scheduling-parameters.ts";
import { type ResponseHead, encodeInferResponse } from "./encode-response.ts";
import { checkEnvelope } from "./envelope.ts";

/** Where each answered request is counted (the server's Metrics, or an HTTP thread's tally of it). */
export type RequestCounter = Pick<Metrics, "requestDone">;

/** The transport a request came in on: the `protocol` label of the request metrics. */
export type Protocol = "http" | "grpc";

export interface InferServiceOptions {
  readonly registry: Pick<ModelRegistryView, "getModel"> &
    Partial<Pick<ModelRegistryView, "isShuttingDown" | "repositoryIndex">>;
  readonly metrics: RequestCounter;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  /** The regions tensors may name (Triton's system shared memory); without it they are refused. */
  readonly sharedMemory?: SharedMemoryRegistry;
}

/** What the transport may learn while decoding, for the log line of a request that then fails. */
export interface DecodeContext {
  id: string | undefined;
}

/**
 * One request as a transport hands it over: how to decode it against the model, how to encode
 * the answer and how to answer a failure. The service does the rest, the same for every transport.
 */
export interface InferCall<R> {
  readonly protocol: Protocol;
  readonly modelName: string;
  readonly version: string | undefined;
  /** Aborted when the client goes away or its deadline passes: a queued run is then dropped. */
  readonly signal?: CancelFlag;
  /** performance.now() past which the request is refused before it runs (DEADLINE_EXCEEDED). */
  readonly deadline?: number;
  /** Reads what the transport must read before the model is known (the gRPC message). */
  parse?(): void;
  decode(model: ServedModel, context: DecodeContext): DecodedRequest | Promise<DecodedRequest>;
  encode(head: ResponseHead, plans: readonly OutputPlan[], results: ReadonlyMap<string, HostTensor>): R;
  /** The status label of a success ("200", "OK"). */
  readonly okStatus: string;
  /** A failure's answer and its status label. */
  fail(error: unknown): { answer: R; status: string };
}

/**
 * One infer request from its transport's form to the answer: every error becomes that
 * transport's error answer here, so each request is counted, timed and logged exactly once
 * whatever happened to it. The REST and gRPC transports both run through `execute`.
 */
export class InferService {
  constructor(private readonly options: InferServiceOptions) {}

  get sharedMemory(): SharedMemoryRegistry | undefined {
    return this.options.sharedMemory;
  }

  /** A REST request. */
  handle(request: Request, modelName: string, version: string | undefined): Promise<Response> {
    const { maxBodyBytes, sharedMemory } = this.options;
    return this.execute<Response>({
      protocol: "http",
      modelName,
      version,
      signal: request.signal,
      decode: async (model, context) => {
        const bytes = await readBody(request, maxBodyBytes);
        // Read for this request alone: its binary inputs, views of it, may move to the engine's thread.
        if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) noteMovable(bytes.buffer);
        const split = splitBody(request.headers.get(HEADER_LENGTH), bytes);
        const body = checkEnvelope(split.header);
        context.id = body.id;
        return decodeInferRequest(model, body, split.binary, split.headerBytes, sharedMemory);
      },
      encode: encodeInferResponse,
      okStatus: "200",
      fail: (error) => {
        const status = statusOf(error);
        const headers = unreadLargeBody(request) ? CLOSE_CONNECTION : undefined;
        return { answer: errorResponse(status, messageOf(error), headers), status: String(status) };
      },
    });
  }

  async execute<R>(call: InferCall<R>): Promise<R> {
    const start = performance.now();
    const context: DecodeContext = { id: undefined };
    let label = "_unknown";
    let answer: R;
    let status: string;
    let failure: string | undefined;
    let abandoned = false;
    let shed = false;
    try {
      call.parse?.();
      const model = findModel(this.options.registry, call.modelName, call.version);
      label = model.name;
      if (!model.ready()) throw new XlaserveError("UNAVAILABLE", `model "${model.name}" is not ready`);
      model.admit?.();
      const decoded = await call.decode(model, context);
      context.id = decoded.id;
      const deadline = soonest(call.deadline, decoded.deadline);
      if (deadline !== undefined && performance.now() >= deadline) {
        throw new XlaserveError("DEADLINE_EXCEEDED", "the request's deadline passed before it could run");
      }
      const results = await model.infer({
        id: decoded.id,
        inputs: decoded.inputs,
        signal: call.signal,
        deadline,
        priority: decoded.priority,
      });
      writeSharedOutputs(decoded.outputs, results);
      answer = call.encode(
        { modelName: model.name, modelVersion: model.version, id: decoded.id },
        decoded.outputs,
        results,
      );
      status = call.okStatus;
    } catch (error) {
      const cause = causeOf(error, call);
      failure = messageOf(cause);
      abandoned = cause instanceof HttpError && cause.status === CLIENT_CLOSED;
      shed = isXlaserveError(cause) && cause.code === "QUEUE_FULL";
      ({ answer, status } = call.fail(cause));
    }
    const seconds = (performance.now() - start) / 1000;
    const { metrics, logger } = this.options;
    metrics.requestDone(label, status, seconds, call.protocol, abandoned ? undefined : failure);
    if (abandoned) {
      logger.debug("infer abandoned by the client", {
        model: call.modelName,
        version: call.version,
        protocol: call.protocol,
        ms: round(seconds * 1000),
        id: context.id,
      });
    } else if (shed) {
      // Refused under overload: counted by the metrics (status 429). A warn line for each would be
      // the costliest thing done for a request refused so that the HTTP thread stays free, at
      // thousands a second, and would bury every other line of the log.
      if (logger.level === "debug") {
        logger.debug("infer refused: queue full", {
          model: call.modelName,
          version: call.version,
          protocol: call.protocol,
          id: context.id,
          error: failure,
        });
      }
    } else if (failure !== undefined) {
      logger.warn("infer failed", {
        model: call.modelName,
        version: call.version,
        protocol: call.protocol,
        status: logged(status),
        ms: round(seconds * 1000),
        id: context.id,
        error: failure,
      });
    } else if (logger.level === "debug") {
      logger.debug("infer", {
        model: call.modelName,
        version: call.version,
        protocol: call.protocol,
        status: logged(status),
        ms: round(seconds * 1000),
        id: context.id,
      });
    }
    return answer;
  }
}

/**
 * From this declared size, a body refused before it was read (a 429 under overload, an unknown
 * model) is not drained: the answer closes the connection, and the server never receives the
 * rest. Draining a 602 KB image body per refusal kept the HTTP thread receiving the very flood it
 * refused, while other models' requests waited behind it; a client reconnects for its next
 * request, which costs less than one such body. Smaller bodies are drained, keeping the connection.
 */
export const CLOSE_UNREAD_BODY_BYTES = 64 * 1024;

const CLOSE_CONNECTION = { connection: "close" } as const;

/** Whether the request's body of CLOSE_UNREAD_BODY_BYTES or more has not been read. */
function unreadLargeBody(request: Request): boolean {
  if (request.bodyUsed) return false;
  const declared = Number(request.headers.get("content-length") ?? 0);
  return declared >= CLOSE_UNREAD_BODY_BYTES;
}

/**
 * Whatever failed once the call was given up is that: past its deadline DEADLINE_EXCEEDED, else
 * the client's doing (it hung up, or aborted a run).
 */
function causeOf(error: unknown, call: InferCall<unknown>): unknown {
  if (!call.signal?.aborted) return error;
  if (call.deadline !== undefined && performance.now() >= call.deadline) {
    return new XlaserveError("DEADLINE_EXCEEDED", "the request's deadline passed before it was answered");
  }
  return clientClosed();
}

export function statusOf(error: unknown): number {
  if (error instanceof HttpError) return error.status;
  return statusForCode(asXlaserveError(error).code);
}

function messageOf(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}

/** HTTP statuses are logged as numbers (as before gRPC came), gRPC's as their names. */
function logged(status: string): number | string {
  const n = Number(status);
  return Number.isInteger(n) ? n : status;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

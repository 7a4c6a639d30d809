import { create, toBinary } from "@bufbuild/protobuf";
import type { CancelFlag } from "../../contract.ts";
import type { InferCall, InferService } from "../../infer/service.ts";
import { decodeGrpcInfer } from "../decode-infer.ts";
import { decodeMessage } from "../definition.ts";
import { encodeGrpcInfer } from "../encode-infer.ts";
import {
  type ModelInferRequest,
  ModelInferRequestSchema,
  ModelStreamInferResponseSchema,
} from "../gen/grpc_service_pb.ts";
import { grpcStatusOf, serviceError, statusName } from "../status.ts";
import type { GrpcError, StreamCall, UnaryCall, UnaryCallback } from "../transport/calls.ts";
import type { Framed } from "../transport/framing.ts";
import { decodeInferRequestFast } from "../wire/decode-request.ts";

/** The answer's frame (the transport sends it as it is), or the error. */
type Answer = { response: Framed; error?: undefined } | { response?: undefined; error: GrpcError };

/** ModelStreamInferResponse's infer_response field: a stream's answer wraps the unary one. */
const STREAM_INFER_RESPONSE_FIELD = 2;

/**
 * One ModelInferRequest through the shared infer service: the protobuf message is decoded inside
 * the service's accounting, so a malformed one is counted and logged like any failed request.
 * The common message is read by the wire decoder; protobuf-es reads the rest (and the malformed).
 */
function inferCall(
  infer: InferService,
  bytes: Uint8Array,
  signal: CancelFlag,
  deadline: number | undefined,
  wrapField = 0,
): InferCall<Answer> {
  let request: ModelInferRequest | undefined;
  const call: InferCall<Answer> & { modelName: string; version: string | undefined } = {
    protocol: "grpc",
    modelName: "",
    version: undefined,
    signal,
    deadline,
    parse: () => {
      request = decodeInferRequestFast(bytes) ?? decodeMessage(ModelInferRequestSchema, bytes);
      call.modelName = request.modelName;
      call.version = request.modelVersion === "" ? undefined : request.modelVersion;
    },
    decode: (model, context) => {
      const r = request as ModelInferRequest;
      context.id = r.id === "" ? undefined : r.id;
      return decodeGrpcInfer(model, r, infer.sharedMemory);
    },
    encode: (head, plans, results) => ({ response: encodeGrpcInfer(head, plans, results, wrapField) }),
    okStatus: "OK",
    fail: (error) => ({ answer: { error: serviceError(error) }, status: statusName(grpcStatusOf(error)) }),
  };
  return call;
}

/**
 * A call's own `cancelled` state (the client reset the stream or went away, or the deadline
 * passed), read as the request's cancel flag: no controller and no listener per request.
 */
export class CallCancelled implements CancelFlag {
  constructor(private readonly call: { readonly cancelled: boolean }) {}
  get aborted(): boolean {
    return this.call.cancelled;
  }
}

export function modelInferHandler(infer: InferService) {
  return (call: UnaryCall, callback: UnaryCallback) => {
    void infer.execute(inferCall(infer, call.request, new CallCancelled(call), call.deadline)).then((answer) => {
      if (answer.error) callback(answer.error);
      else callback(null, answer.response);
    });
  };
}

/**
 * ModelStreamInfer: each request on the stream runs as it arrives (several at once), and the
 * answers go back in the order the requests came, each a response or its error_message; a
 * failed request does not end the stream.
 */
export function modelStreamInferHandler(infer: InferService) {
  return (call: StreamCall) => {
    const signal = new CallCancelled(call);
    const deadline = call.deadline;
    let tail: Promise<void> = Promise.resolve();
    call.on("data", (bytes: Buffer) => {
      const answer = infer.execute(inferCall(infer, bytes, signal, deadline, STREAM_INFER_RESPONSE_FIELD));
      tail = tail.then(async () => {
        const a = await answer;
        if (signal.aborted) return;
        call.write(
          a.error
            ? toBinary(
                ModelStreamInferResponseSchema,
                create(ModelStreamInferResponseSchema, { errorMessage: a.error.details }),
              )
            : a.response,
        );
      });
    });
    call.on("end", () => {
      void tail.then(() => {
        if (!signal.aborted) call.end();
      });
    });
  };
}

import { Metadata, type ServiceError, credentials, makeGenericClientConstructor } from "@grpc/grpc-js";

/** A ModelInfer call's outcome: the answer's bytes, or the status it failed with. */
export type RawAnswer = { readonly error: null; readonly bytes: Buffer } | { readonly error: ServiceError };

/**
 * ModelInfer with the request and the answer as bytes, undecoded: a load generator sends the same
 * pre-encoded request again and again without paying for protobuf on the client's side, and a
 * test can send bytes that are no ModelInferRequest at all.
 */
export interface RawInferClient {
  modelInfer(request: Uint8Array): Promise<RawAnswer>;
  close(): void;
}

/** ModelInfer with Buffers as they are both ways, for a client or a test's own server. */
export const RAW_MODEL_INFER_DEFINITION = {
  ModelInfer: {
    path: "/inference.GRPCInferenceService/ModelInfer",
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
};

const RawService = makeGenericClientConstructor(RAW_MODEL_INFER_DEFINITION, "RawInference");

type RawStub = {
  ModelInfer(b: Buffer, m: Metadata, cb: (e: ServiceError | null, r?: Buffer) => void): void;
  close(): void;
};

/** A cleartext channel to `address` (host:port) with no message caps of its own. */
export function rawInferClient(address: string): RawInferClient {
  const stub = new RawService(address, credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
  }) as unknown as RawStub;
  const metadata = new Metadata();
  return {
    modelInfer: (request) => {
      const bytes = Buffer.from(request.buffer, request.byteOffset, request.byteLength);
      return new Promise((done) =>
        stub.ModelInfer(bytes, metadata, (error, answer) =>
          done(error ? { error } : { error: null, bytes: answer ?? Buffer.alloc(0) }),
        ),
      );
    },
    close: () => stub.close(),
  };
}

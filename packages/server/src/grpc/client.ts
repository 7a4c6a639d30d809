import { type DescMessage, type MessageInitShape, type MessageShape, create } from "@bufbuild/protobuf";
import {
  type CallOptions,
  type ChannelCredentials,
  type ClientDuplexStream,
  Metadata,
  type ServiceError,
  credentials as grpcCredentials,
  makeGenericClientConstructor,
} from "@grpc/grpc-js";
import { serviceDefinition } from "./definition.ts";
import { GRPCInferenceService } from "./gen/grpc_service_pb.ts";
import { DEFAULT_GRPC_MAX_MESSAGE_BYTES } from "./server.ts";

type Methods = typeof GRPCInferenceService.method;
type UnaryName = { [K in keyof Methods]: Methods[K]["methodKind"] extends "unary" ? K : never }[keyof Methods];

export interface InferenceClientOptions {
  readonly credentials?: ChannelCredentials;
  readonly maxMessageBytes?: number;
  /** Extra grpc-js channel options. */
  readonly channel?: Record<string, string | number>;
}

export interface CallSettings {
  /** Seconds from now (sent as grpc-timeout). */
  readonly timeoutSeconds?: number;
  readonly metadata?: Record<string, string>;
}

/**
 * A typed promise client of inference.GRPCInferenceService over grpc-js, from the same generated
 * code as the server: what the tests, benchmarks and tools here use.
 */
export class InferenceClient {
  private readonly client: InstanceType<ReturnType<typeof makeGenericClientConstructor>>;

  constructor(address: string, options: InferenceClientOptions = {}) {
    const Client = makeGenericClientConstructor(serviceDefinition(GRPCInferenceService), "GRPCInferenceService");
    const max = options.maxMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
    this.client = new Client(address, options.credentials ?? grpcCredentials.createInsecure(), {
      "grpc.max_receive_message_length": max,
      "grpc.max_send_message_length": max,
      ...options.channel,
    });
  }

  /** One unary RPC by its local name (serverLive, modelInfer, ...). */
  call<K extends UnaryName>(
    name: K,
    request: MessageInitShape<Methods[K]["input"]>,
    settings: CallSettings = {},
  ): Promise<MessageShape<Methods[K]["output"]>> {
    const method = GRPCInferenceService.method[name];
    const message = create(method.input as DescMessage, request as MessageInitShape<DescMessage>);
    const fn = (this.client as unknown as Record<string, UnaryFn>)[method.name] as UnaryFn;
    return new Promise((resolve, reject) => {
      fn.call(this.client, message, metadataOf(settings), callOptions(settings), (error, response) => {
        if (error) reject(error);
        else resolve(response as MessageShape<Methods[K]["output"]>);
      });
    });
  }

  /** A ModelStreamInfer stream: write ModelInferRequest messages, read ModelStreamInferResponse ones. */
  stream(settings: CallSettings = {}): ClientDuplexStream<unknown, unknown> {
    const fn = (this.client as unknown as Record<string, StreamFn>)["ModelStreamInfer"] as StreamFn;
    return fn.call(this.client, metadataOf(settings), callOptions(settings));
  }

  close(): void {
    this.client.close();
  }
}

type UnaryFn = (
  request: unknown,
  metadata: Metadata,
  options: CallOptions,
  callback: (error: ServiceError | null, response?: unknown) => void,
) => void;
type StreamFn = (metadata: Metadata, options: CallOptions) => ClientDuplexStream<unknown, unknown>;

function metadataOf(settings: CallSettings): Metadata {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(settings.metadata ?? {})) metadata.set(k, v);
  return metadata;
}

function callOptions(settings: CallSettings): CallOptions {
  return settings.timeoutSeconds === undefined ? {} : { deadline: Date.now() + settings.timeoutSeconds * 1000 };
}

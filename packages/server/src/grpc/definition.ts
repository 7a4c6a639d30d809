import { type DescMessage, type DescService, type MessageShape, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import { badRequest } from "../http-error.ts";

/**
 * The grpc-js service definition of a protobuf-es service: the clients' (grpc-js), and the
 * server's routes (paths and response serializers). Requests are handed to the handlers undecoded
 * (the raw Buffer): decoding there lets a malformed message be INVALID_ARGUMENT with a message
 * naming the problem. A handler answers with a message, which protobuf-es encodes, or with the
 * message's bytes already encoded, handed on as they are.
 */
export function serviceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    const streams = method.methodKind === "bidi_streaming";
    definition[method.name] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: streams || method.methodKind === "client_streaming",
      responseStream: streams || method.methodKind === "server_streaming",
      requestSerialize: (value) => asBuffer(toBinary(method.input, value as MessageShape<DescMessage>)),
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: (value) =>
        value instanceof Uint8Array
          ? asBuffer(value)
          : asBuffer(toBinary(method.output, value as MessageShape<DescMessage>)),
      responseDeserialize: (bytes: Buffer) => fromBinary(method.output, bytes),
      originalName: method.localName,
    };
  }
  return definition;
}

/** A request's message, or INVALID_ARGUMENT saying why its bytes are not one. */
export function decodeMessage<D extends DescMessage>(schema: D, bytes: Uint8Array): MessageShape<D> {
  try {
    return fromBinary(schema, bytes);
  } catch (error) {
    throw badRequest(`the request is not a valid ${schema.typeName} message: ${(error as Error).message}`);
  }
}

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

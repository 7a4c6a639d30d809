import {
  type DescMethod,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
  create,
} from "@bufbuild/protobuf";
import { decodeMessage } from "./definition.ts";
import { serviceError } from "./status.ts";
import type { UnaryCall, UnaryHandler } from "./transport/calls.ts";

type Method = DescMethod & { input: DescMessage; output: DescMessage };

export type { UnaryHandler };

/**
 * A unary handler from a function of the decoded request: what it returns (or resolves
 * to) is the response, what it throws the error status (INVALID_ARGUMENT, NOT_FOUND, ...) with
 * the error's message as details.
 */
export function unary<M extends Method>(
  method: M,
  fn: (
    request: MessageShape<M["input"]>,
    call: UnaryCall,
  ) => MessageInitShape<M["output"]> | Promise<MessageInitShape<M["output"]>>,
): UnaryHandler {
  return (call, callback) => {
    const run = async () => {
      const request = decodeMessage(method.input, call.request) as MessageShape<M["input"]>;
      return create(method.output, await fn(request, call));
    };
    run().then(
      (response) => callback(null, response),
      (error) => callback(serviceError(error)),
    );
  };
}

import { badRequest } from "../http-error.ts";
import type { InferParameter, ModelRepositoryParameter } from "./gen/grpc_service_pb.ts";

/**
 * A parameters map as the plain values REST's JSON carries (bool, number, string), so the
 * shared code reads both transports' parameters alike. 64-bit integers beyond +-2^53 are refused:
 * no parameter the server reads needs them.
 */
export function plainParameters(
  label: string,
  map: { readonly [key: string]: InferParameter | ModelRepositoryParameter },
): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const key in map) {
    const choice = (map[key] as InferParameter | ModelRepositoryParameter).parameterChoice;
    let value: unknown;
    switch (choice.case) {
      case "int64Param":
      case "uint64Param":
        if (choice.value > BigInt(Number.MAX_SAFE_INTEGER) || choice.value < BigInt(Number.MIN_SAFE_INTEGER)) {
          throw badRequest(`${label}: parameters.${key} = ${choice.value} is beyond +-2^53`);
        }
        value = Number(choice.value);
        break;
      case undefined:
        value = null;
        break;
      default:
        value = choice.value;
    }
    out ??= {};
    out[key] = value;
  }
  return out;
}

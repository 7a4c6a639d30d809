import { badRequest } from "../http-error.ts";

/** A tensor's place in a registered region (Triton's shared_memory_* parameters). */
export interface SharedTensorRef {
  readonly region: string;
  readonly byteSize: number;
  readonly offset: number;
}

export const SHM_REGION = "shared_memory_region";
export const SHM_BYTE_SIZE = "shared_memory_byte_size";
export const SHM_OFFSET = "shared_memory_offset";

/**
 * The shared-memory reference in a tensor's parameters, or undefined when it has none. A region
 * without its byte size, a size or offset without a region, or values of the wrong type are
 * errors naming the parameter.
 */
export function sharedTensorRef(
  label: string,
  params: Readonly<Record<string, unknown>> | undefined,
): SharedTensorRef | undefined {
  if (!params) return undefined;
  const region = params[SHM_REGION];
  const size = params[SHM_BYTE_SIZE];
  const offset = params[SHM_OFFSET];
  if (region === undefined || region === null) {
    if (size !== undefined && size !== null)
      throw badRequest(`${label}: parameters.${SHM_BYTE_SIZE} needs parameters.${SHM_REGION}`);
    if (offset !== undefined && offset !== null)
      throw badRequest(`${label}: parameters.${SHM_OFFSET} needs parameters.${SHM_REGION}`);
    return undefined;
  }
  if (typeof region !== "string" || region === "") {
    throw badRequest(`${label}: parameters.${SHM_REGION} must be a region name (a non-empty string)`);
  }
  if (size === undefined || size === null) {
    throw badRequest(
      `${label}: parameters.${SHM_REGION} needs parameters.${SHM_BYTE_SIZE} (the tensor's bytes in the region)`,
    );
  }
  return {
    region,
    byteSize: count(label, SHM_BYTE_SIZE, size),
    offset: offset === undefined || offset === null ? 0 : count(label, SHM_OFFSET, offset),
  };
}

function count(label: string, key: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw badRequest(`${label}: parameters.${key} must be a non-negative integer`);
  }
  return value;
}

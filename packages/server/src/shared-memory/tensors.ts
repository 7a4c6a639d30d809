import {
  type DType,
  type HostTensor,
  type HostTypedArray,
  type TensorSpec,
  bytesAsTyped,
  dtypeSize,
  kserveName,
  tensorBytes,
} from "@xlaserve/core";
import { badRequest } from "../http-error.ts";
import type { OutputPlan, SharedOutput } from "../infer/decode-request.ts";
import type { SharedMemoryRegistry } from "./registry.ts";
import type { SharedTensorRef } from "./tensor-params.ts";

function registryFor(label: string, sharedMemory: SharedMemoryRegistry | undefined): SharedMemoryRegistry {
  if (!sharedMemory) throw badRequest(`${label}: shared memory is not available on this server`);
  return sharedMemory;
}

/**
 * An input's elements from a region: the byte size must be exactly the tensor's, within the
 * region. The typed array is a view of the mapping (no copy) when the bytes are aligned for the
 * dtype; a misaligned offset costs one copy.
 */
export function readSharedInput(
  label: string,
  dtype: DType,
  shape: readonly number[],
  count: number,
  ref: SharedTensorRef,
  sharedMemory: SharedMemoryRegistry | undefined,
): HostTypedArray {
  const needed = count * dtypeSize(dtype);
  if (ref.byteSize !== needed) {
    throw badRequest(
      `${label}: shared_memory_byte_size is ${ref.byteSize} bytes but shape [${shape.join(", ")}] of ${kserveName(dtype)} needs ${needed}`,
    );
  }
  const bytes = registryFor(label, sharedMemory).view(label, ref.region, ref.offset, ref.byteSize);
  if (dtype === "bool") {
    for (let i = 0; i < bytes.length; i++) {
      if ((bytes[i] as number) > 1) throw badRequest(`${label}: BOOL element ${i} is byte ${bytes[i]}, not 0 or 1`);
    }
  }
  return bytesAsTyped(dtype, bytes);
}

/**
 * Checks an output's target before the model runs: the region exists and holds byte_size bytes
 * at the offset, and, when the output's shape follows from the spec and the batch, byte_size is
 * at least the output's size.
 */
export function planSharedOutput(
  label: string,
  spec: TensorSpec,
  batch: number,
  ref: SharedTensorRef,
  sharedMemory: SharedMemoryRegistry | undefined,
): SharedOutput {
  const target = registryFor(label, sharedMemory).view(label, ref.region, ref.offset, ref.byteSize);
  const expected = knownBytes(spec, batch);
  if (expected !== undefined && expected > ref.byteSize) {
    throw badRequest(
      `${label}: shared_memory_byte_size ${ref.byteSize} is smaller than the output's ${expected} bytes`,
    );
  }
  return { ...ref, target };
}

function knownBytes(spec: TensorSpec, batch: number): number | undefined {
  let n = dtypeSize(spec.dtype);
  for (const dim of spec.dims) {
    if (dim.kind === "fixed") n *= dim.size;
    else if (dim.kind === "batch" && batch >= 0) n *= batch;
    else return undefined;
  }
  return n;
}

/** Writes the outputs that go to shared memory into their regions (once the model has answered). */
export function writeSharedOutputs(plans: readonly OutputPlan[], results: ReadonlyMap<string, HostTensor>): void {
  for (const plan of plans) {
    if (!plan.shared) continue;
    const tensor = results.get(plan.name);
    if (!tensor) continue; // the encoder reports the missing output
    const bytes = tensorBytes(tensor);
    if (bytes.byteLength > plan.shared.byteSize) {
      throw badRequest(
        `requested output "${plan.name}": shared_memory_byte_size ${plan.shared.byteSize} is smaller than the output's ${bytes.byteLength} bytes`,
      );
    }
    plan.shared.target.set(bytes);
  }
}

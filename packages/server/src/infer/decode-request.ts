import {
  type DType,
  type HostTensor,
  type HostTypedArray,
  type TensorSpec,
  bytesAsTyped,
  dtypeFromKserve,
  dtypeSize,
  isMovable,
  kserveName,
  noteMovable,
  tensorOverBytes,
} from "@xlaserve/core";
import type { ServedModel } from "../contract.ts";
import { badRequest } from "../http-error.ts";
import { type SchedulingRequest, schedulingOf } from "./scheduling-parameters.ts";
import { planSharedOutput, readSharedInput } from "../shared-memory/tensors.ts";
import type { SharedMemoryRegistry } from "../shared-memory/registry.ts";
import { SHM_REGION, type SharedTensorRef, sharedTensorRef } from "../shared-memory/tensor-params.ts";
import { decodeJsonData } from "./decode-data.ts";
import type { InferRequestBody } from "./model.ts";
import { clientShape, describeSpec, modelIndex } from "./model-index.ts";

/** One output to return, and how. */
export interface OutputPlan {
  readonly name: string;
  readonly binary: boolean;
  /** Where the output goes instead of the answer: a checked view of a shared-memory region. */
  readonly shared?: SharedOutput;
}

export interface SharedOutput extends SharedTensorRef {
  readonly target: Uint8Array;
}

export interface DecodedRequest extends SchedulingRequest {
  readonly id: string | undefined;
  readonly inputs: Map<string, HostTensor>;
  readonly outputs: readonly OutputPlan[];
}

/** What every transport's input tensors have in common (REST's JSON objects, gRPC's messages). */
export interface InputHead {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly parameters?: Readonly<Record<string, unknown>> | undefined;
}

export interface OutputHead {
  readonly name: string;
  readonly parameters?: Readonly<Record<string, unknown>> | undefined;
}

/** An input's elements as bytes at an offset their dtype cannot be viewed at (unaligned-bytes.ts). */
export class UnalignedElements {
  constructor(
    readonly bytes: Uint8Array,
    /** Whether the bytes are the request's alone (a movable body), so a copy of them is too. */
    readonly movable: boolean,
  ) {}
}

/** A transport's part of decoding: where an input's elements are, once its head is checked. */
export interface InputReader<T extends InputHead> {
  read(input: T, dtype: DType, count: number, label: string): HostTypedArray | UnalignedElements;
  /** The input carries elements of its own, which cannot go with a shared-memory region. */
  hasOwnData(input: T): boolean;
}

export interface DecodedInputs {
  readonly inputs: Map<string, HostTensor>;
  /** The request's batch size, or -1 when no input has a batch axis. */
  readonly batch: number;
}

/**
 * Checks a REST request against the model's specs and decodes its tensors: names, datatypes,
 * shapes, batch sizes, element counts and binary byte lengths, all before the model sees anything.
 * `binary` is the section after the JSON header (empty without the binary extension);
 * `headerBytes` the JSON header's length, which bounds how many elements its data can hold.
 */
export function decodeInferRequest(
  model: ServedModel,
  body: InferRequestBody,
  binary: Uint8Array,
  headerBytes: number,
  sharedMemory?: SharedMemoryRegistry,
): DecodedRequest {
  let binaryOffset = 0;
  type Input = InferRequestBody["inputs"][number];
  const reader: InputReader<Input> = {
    hasOwnData: (input) =>
      input.data !== undefined ||
      (input.parameters?.binary_data_size !== undefined && input.parameters.binary_data_size !== null),
    read: (input, dtype, count, label) => {
      const binarySize = input.parameters?.binary_data_size;
      if (binarySize !== undefined && binarySize !== null) {
        if (input.data !== undefined) throw badRequest(`${label} has both data and parameters.binary_data_size`);
        if (typeof binarySize !== "number" || !Number.isInteger(binarySize) || binarySize < 0) {
          throw badRequest(`${label}: parameters.binary_data_size must be a non-negative integer`);
        }
        const data = decodeBinary(label, dtype, input.shape, count, binary, binaryOffset, binarySize);
        binaryOffset += binarySize;
        return data;
      }
      if (input.data === undefined) {
        throw badRequest(`${label} has neither data nor parameters.binary_data_size`);
      }
      return decodeJsonData(label, dtype, input.shape, count, input.data, headerBytes);
    },
  };
  const { inputs, batch } = decodeInputs(model, body.inputs, reader, sharedMemory);
  if (binaryOffset !== binary.byteLength) {
    throw badRequest(
      `the binary section after the JSON header is ${binary.byteLength} bytes but the inputs' binary_data_size add up to ${binaryOffset}`,
    );
  }
  checkMissing(model, inputs);
  const allBinary = flag("parameters.binary_data_output", body.parameters?.binary_data_output) ?? false;
  return {
    id: body.id,
    inputs,
    outputs: planOutputs(model, body.outputs, allBinary, batch, sharedMemory),
    ...schedulingOf(body.parameters),
  };
}

/**
 * The checks every transport shares, input by input: known and unrepeated names, datatype, rank
 * and fixed dims, one batch size within the model's maximum; then the elements, from a
 * shared-memory region or from the transport's reader.
 */
export function decodeInputs<T extends InputHead>(
  model: ServedModel,
  list: readonly T[],
  reader: InputReader<T>,
  sharedMemory: SharedMemoryRegistry | undefined,
): DecodedInputs {
  const index = modelIndex(model);
  const inputs = new Map<string, HostTensor>();
  let batch = -1;
  let batchFrom = "";
  for (let i = 0; i < list.length; i++) {
    const input = list[i] as T;
    const label = `input "${input.name}"`;
    if (inputs.has(input.name)) throw badRequest(`${label} appears more than once`);
    const spec = index.inputs.get(input.name);
    if (!spec) {
      throw badRequest(`unknown ${label}; model "${model.name}" takes: ${index.inputNames}`);
    }
    const dtype = checkDatatype(label, spec, input.datatype);
    const inputBatch = checkShape(label, spec, input.shape, model.maxBatchSize);
    if (inputBatch >= 0) {
      if (batch >= 0 && inputBatch !== batch) {
        throw badRequest(`${label} has batch size ${inputBatch} but ${batchFrom} has ${batch}`);
      }
      batch = inputBatch;
      batchFrom = label;
    }
    const count = product(input.shape);
    const shared = sharedTensorRef(label, input.parameters);
    let data: HostTypedArray | UnalignedElements;
    if (shared) {
      if (reader.hasOwnData(input)) throw badRequest(`${label} has both its own data and parameters.${SHM_REGION}`);
      data = readSharedInput(label, dtype, input.shape, count, shared, sharedMemory);
    } else {
      data = reader.read(input, dtype, count, label);
    }
    inputs.set(
      input.name,
      data instanceof UnalignedElements
        ? unalignedTensor(dtype, input.shape, data)
        : { dtype, shape: input.shape, data },
    );
  }
  return { inputs, batch };
}

/** Every input the model takes is there (after the transport's own checks of what it read). */
export function checkMissing(model: ServedModel, inputs: ReadonlyMap<string, HostTensor>): void {
  if (inputs.size === model.inputs.length) return;
  for (const spec of model.inputs) {
    if (!inputs.has(spec.name)) {
      throw badRequest(`missing input "${spec.name}" (${describeSpec(spec)}) for model "${model.name}"`);
    }
  }
}

function checkDatatype(label: string, spec: TensorSpec, datatype: string): DType {
  const dtype = dtypeFromKserve(datatype);
  if (dtype === undefined) {
    if (datatype === "BYTES")
      throw badRequest(`${label}: datatype BYTES is not supported; the model takes ${kserveName(spec.dtype)}`);
    throw badRequest(`${label}: unknown datatype "${datatype}"; the model takes ${kserveName(spec.dtype)}`);
  }
  if (dtype !== spec.dtype) {
    throw badRequest(`${label}: datatype ${datatype} does not match the model's ${kserveName(spec.dtype)}`);
  }
  return dtype;
}

/** Returns the batch size when the tensor has a batch axis, else -1. */
function checkShape(label: string, spec: TensorSpec, shape: readonly number[], maxBatch: number): number {
  // Only the error messages need these; built on demand, off the per-request path.
  const expected = () => clientShape(spec).join(", ");
  const shown = () => `[${shape.join(", ")}]`;
  if (shape.length !== spec.dims.length) {
    throw badRequest(
      `${label}: shape ${shown()} has ${shape.length} axes but the model expects ${spec.dims.length} ([${expected()}])`,
    );
  }
  let batch = -1;
  for (let axis = 0; axis < shape.length; axis++) {
    const size = shape[axis] as number;
    const dim = spec.dims[axis];
    if (!dim) continue;
    if (!Number.isInteger(size) || size < 0) {
      throw badRequest(`${label}: shape ${shown()} axis ${axis} is not a non-negative integer`);
    }
    if (dim.kind === "fixed" && size !== dim.size) {
      throw badRequest(
        `${label}: shape ${shown()} axis ${axis} is ${size} but the model expects ${dim.size} ([${expected()}])`,
      );
    }
    if (dim.kind === "batch") {
      if (size === 0) throw badRequest(`${label}: batch size 0 (shape ${shown()}); a request needs at least one item`);
      if (size > maxBatch) {
        throw badRequest(
          `${label}: batch size ${size} (shape ${shown()}) exceeds the model's maximum batch size ${maxBatch}`,
        );
      }
      batch = size;
    }
  }
  return batch;
}

function decodeBinary(
  label: string,
  dtype: DType,
  shape: readonly number[],
  count: number,
  binary: Uint8Array,
  offset: number,
  size: number,
): HostTypedArray | UnalignedElements {
  const needed = count * dtypeSize(dtype);
  if (size !== needed) {
    throw badRequest(
      `${label}: binary_data_size is ${size} bytes but shape [${shape.join(", ")}] of ${kserveName(dtype)} needs ${needed}`,
    );
  }
  if (offset + size > binary.byteLength) {
    throw badRequest(
      `${label}: binary data (${size} bytes at offset ${offset}) runs past the end of the ${binary.byteLength}-byte binary section`,
    );
  }
  const bytes = binary.subarray(offset, offset + size);
  if (dtype === "bool") {
    for (let i = 0; i < bytes.length; i++) {
      if ((bytes[i] as number) > 1) throw badRequest(`${label}: BOOL element ${i} is byte ${bytes[i]}, not 0 or 1`);
    }
  }
  if (bytes.byteOffset % dtypeSize(dtype) === 0) return bytesAsTyped(dtype, bytes);
  return new UnalignedElements(bytes, isMovable(binary));
}

/**
 * A tensor over unaligned bytes: copied into aligned storage only where its elements are read
 * as such; a coalesced execution's join or the hand-over to the engine thread takes the bytes.
 */
function unalignedTensor(dtype: DType, shape: readonly number[], e: UnalignedElements): HostTensor {
  // The copy is this request's alone, as a movable body is.
  return tensorOverBytes(dtype, shape, e.bytes, e.movable ? (copy) => noteMovable(copy.buffer) : undefined);
}

/**
 * The outputs to return (every output when none is asked for), each checked: known, unrepeated,
 * no classification, and a shared-memory target within its region and large enough for the
 * output where the output's size is known before the run (`batch` from the inputs).
 */
export function planOutputs(
  model: ServedModel,
  requested: readonly OutputHead[] | undefined,
  allBinary: boolean,
  batch: number,
  sharedMemory: SharedMemoryRegistry | undefined,
): OutputPlan[] {
  const index = modelIndex(model);
  if (!requested || requested.length === 0) {
    return model.outputs.map((spec) => ({ name: spec.name, binary: allBinary }));
  }
  const plans: OutputPlan[] = [];
  const seen = new Set<string>();
  for (const output of requested) {
    const label = `requested output "${output.name}"`;
    const spec = index.outputs.get(output.name);
    if (!spec) {
      throw badRequest(`unknown ${label}; model "${model.name}" produces: ${index.outputNames}`);
    }
    if (seen.has(output.name)) throw badRequest(`${label} appears more than once`);
    seen.add(output.name);
    if (output.parameters?.classification !== undefined) {
      throw badRequest(`${label}: the classification extension is not supported`);
    }
    const binary = flag(`${label}: parameters.binary_data`, output.parameters?.binary_data) ?? allBinary;
    const ref = sharedTensorRef(label, output.parameters);
    if (ref) {
      const shared = planSharedOutput(label, spec, batch, ref, sharedMemory);
      plans.push({ name: output.name, binary: false, shared });
    } else {
      plans.push({ name: output.name, binary });
    }
  }
  return plans;
}

export function flag(what: string, value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw badRequest(`${what} must be true or false`);
  return value;
}

function product(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

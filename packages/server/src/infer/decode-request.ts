import {
  type DType,
  type HostTensor,
  type HostTypedArray,
  type TensorSpec,
  bytesAsTyped,
  dtypeFromKserve,
  dtypeSize,
  kserveName,
} from "@xlaserve/core";
import type { ServedModel } from "../contract.ts";
import { badRequest } from "../http-error.ts";
import { decodeJsonData } from "./decode-data.ts";
import type { InferRequestBody } from "./model.ts";
import { clientShape, describeSpec, modelIndex } from "./model-index.ts";

/** One output to return, and how. */
export interface OutputPlan {
  readonly name: string;
  readonly binary: boolean;
}

export interface DecodedRequest {
  readonly id: string | undefined;
  readonly inputs: Map<string, HostTensor>;
  readonly outputs: readonly OutputPlan[];
}

const UNSUPPORTED_PARAMETERS = ["shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"];

/**
 * Checks a request against the model's specs and decodes its tensors: names, datatypes, shapes,
 * batch sizes, element counts and binary byte lengths, all before the model sees anything.
 * `binary` is the section after the JSON header (empty without the binary extension);
 * `headerBytes` the JSON header's length, which bounds how many elements its data can hold.
 */
export function decodeInferRequest(
  model: ServedModel,
  body: InferRequestBody,
  binary: Uint8Array,
  headerBytes: number,
): DecodedRequest {
  const index = modelIndex(model);
  const inputs = new Map<string, HostTensor>();
  let binaryOffset = 0;
  let batch = -1;
  let batchFrom = "";
  for (let i = 0; i < body.inputs.length; i++) {
    const input = body.inputs[i] as InferRequestBody["inputs"][number];
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
    const params = input.parameters;
    checkUnsupported(label, params);
    const binarySize = params?.binary_data_size;
    let data: HostTypedArray;
    if (binarySize !== undefined && binarySize !== null) {
      if (input.data !== undefined) throw badRequest(`${label} has both data and parameters.binary_data_size`);
      if (typeof binarySize !== "number" || !Number.isInteger(binarySize) || binarySize < 0) {
        throw badRequest(`${label}: parameters.binary_data_size must be a non-negative integer`);
      }
      data = decodeBinary(label, dtype, input.shape, count, binary, binaryOffset, binarySize);
      binaryOffset += binarySize;
    } else {
      if (input.data === undefined) {
        throw badRequest(`${label} has neither data nor parameters.binary_data_size`);
      }
      data = decodeJsonData(label, dtype, input.shape, count, input.data, headerBytes);
    }
    inputs.set(input.name, { dtype, shape: input.shape, data });
  }
  if (binaryOffset !== binary.byteLength) {
    throw badRequest(
      `the binary section after the JSON header is ${binary.byteLength} bytes but the inputs' binary_data_size add up to ${binaryOffset}`,
    );
  }
  if (inputs.size !== index.inputs.size) {
    for (const spec of model.inputs) {
      if (!inputs.has(spec.name)) {
        throw badRequest(`missing input "${spec.name}" (${describeSpec(spec)}) for model "${model.name}"`);
      }
    }
  }
  return { id: body.id, inputs, outputs: planOutputs(model, body) };
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
): HostTypedArray {
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
  return bytesAsTyped(dtype, bytes);
}

function planOutputs(model: ServedModel, body: InferRequestBody): OutputPlan[] {
  const index = modelIndex(model);
  const allBinary = flag("parameters.binary_data_output", body.parameters?.binary_data_output) ?? false;
  if (!body.outputs || body.outputs.length === 0) {
    return model.outputs.map((spec) => ({ name: spec.name, binary: allBinary }));
  }
  const plans: OutputPlan[] = [];
  const seen = new Set<string>();
  for (const output of body.outputs) {
    const label = `requested output "${output.name}"`;
    if (!index.outputs.has(output.name)) {
      throw badRequest(`unknown ${label}; model "${model.name}" produces: ${index.outputNames}`);
    }
    if (seen.has(output.name)) throw badRequest(`${label} appears more than once`);
    seen.add(output.name);
    checkUnsupported(label, output.parameters);
    if (output.parameters?.classification !== undefined) {
      throw badRequest(`${label}: the classification extension is not supported`);
    }
    const binary = flag(`${label}: parameters.binary_data`, output.parameters?.binary_data) ?? allBinary;
    plans.push({ name: output.name, binary });
  }
  return plans;
}

function flag(what: string, value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw badRequest(`${what} must be true or false`);
  return value;
}

function checkUnsupported(label: string, params: Record<string, unknown> | undefined): void {
  if (!params) return;
  for (const key of UNSUPPORTED_PARAMETERS) {
    if (params[key] !== undefined) throw badRequest(`${label}: parameters.${key}: shared memory is not supported`);
  }
}

function product(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

import { type DType, type HostTypedArray, bytesAsTyped, dtypeSize, kserveName } from "@xlaserve/core";
import type { ServedModel } from "../contract.ts";
import { badRequest } from "../http-error.ts";
import {
  type DecodedRequest,
  type InputHead,
  type InputReader,
  checkMissing,
  decodeInputs,
  planOutputs,
} from "../infer/decode-request.ts";
import type { SharedMemoryRegistry } from "../shared-memory/registry.ts";
import type {
  InferTensorContents,
  ModelInferRequest,
  ModelInferRequest_InferInputTensor,
} from "./gen/grpc_service_pb.ts";
import { schedulingOf } from "../infer/scheduling-parameters.ts";
import { plainParameters } from "./parameters.ts";

interface GrpcInput extends InputHead {
  readonly message: ModelInferRequest_InferInputTensor;
}

/** The typed-contents list each datatype's elements travel in (FP16 and BF16 have none). */
const LIST_OF: Partial<Record<DType, keyof ContentLists>> = {
  bool: "boolContents",
  i8: "intContents",
  i16: "intContents",
  i32: "intContents",
  i64: "int64Contents",
  u8: "uintContents",
  u16: "uintContents",
  u32: "uintContents",
  u64: "uint64Contents",
  f32: "fp32Contents",
  f64: "fp64Contents",
};

type ContentLists = Omit<InferTensorContents, "$typeName" | "$unknown">;
const LISTS: readonly (keyof ContentLists)[] = [
  "boolContents",
  "intContents",
  "int64Contents",
  "uintContents",
  "uint64Contents",
  "fp32Contents",
  "fp64Contents",
  "bytesContents",
];

const INT_RANGES: Partial<Record<DType, readonly [number, number]>> = {
  i8: [-128, 127],
  i16: [-32768, 32767],
  u8: [0, 255],
  u16: [0, 65535],
};

/**
 * A ModelInferRequest checked and decoded by the same code as REST's (decodeInputs,
 * planOutputs); only where the elements are differs: typed `contents`, or `raw_input_contents`
 * taken in order by the inputs that have neither contents nor a shared-memory region.
 */
export function decodeGrpcInfer(
  model: ServedModel,
  request: ModelInferRequest,
  sharedMemory: SharedMemoryRegistry | undefined,
): DecodedRequest {
  if (request.inputs.length === 0) throw badRequest("the request has no inputs");
  const raw = request.rawInputContents;
  let nextRaw = 0;
  const inputs: GrpcInput[] = request.inputs.map((message, i) => ({
    name: message.name,
    datatype: message.datatype,
    shape: shapeOf(`input "${message.name}" (inputs[${i}])`, message.shape),
    parameters: plainParameters(`input "${message.name}"`, message.parameters),
    message,
  }));
  const reader: InputReader<GrpcInput> = {
    hasOwnData: (input) => input.message.contents !== undefined,
    read: (input, dtype, count, label) => {
      const contents = input.message.contents;
      if (contents !== undefined) {
        if (raw.length > 0) {
          throw badRequest(`${label} has typed contents but the request also carries raw_input_contents; use one`);
        }
        return fromContents(label, dtype, count, contents);
      }
      if (nextRaw >= raw.length) {
        throw badRequest(
          `${label} has no data: give it contents, a raw_input_contents entry (the request has ${raw.length}) or a shared-memory region`,
        );
      }
      return fromRaw(label, dtype, input.shape, count, raw[nextRaw++] as Uint8Array);
    },
  };
  const { inputs: decoded, batch } = decodeInputs(model, inputs, reader, sharedMemory);
  if (nextRaw !== raw.length) {
    throw badRequest(`the request has ${raw.length} raw_input_contents entries but its inputs use ${nextRaw}`);
  }
  checkMissing(model, decoded);
  const outputs = request.outputs.map((o) => ({
    name: o.name,
    parameters: plainParameters(`requested output "${o.name}"`, o.parameters),
  }));
  return {
    id: request.id === "" ? undefined : request.id,
    inputs: decoded,
    outputs: planOutputs(model, outputs, false, batch, sharedMemory),
    ...schedulingOf(plainParameters("the request", request.parameters)),
  };
}

function shapeOf(label: string, shape: readonly bigint[]): number[] {
  const out = new Array<number>(shape.length);
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i] as bigint;
    if (d < 0n || d > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw badRequest(`${label}: shape[${i}] = ${d} is not a non-negative integer below 2^53`);
    }
    out[i] = Number(d);
  }
  return out;
}

function fromRaw(
  label: string,
  dtype: DType,
  shape: readonly number[],
  count: number,
  bytes: Uint8Array,
): HostTypedArray {
  const needed = count * dtypeSize(dtype);
  if (bytes.byteLength !== needed) {
    throw badRequest(
      `${label}: raw_input_contents entry is ${bytes.byteLength} bytes but shape [${shape.join(", ")}] of ${kserveName(dtype)} needs ${needed}`,
    );
  }
  if (dtype === "bool") {
    for (let i = 0; i < bytes.length; i++) {
      if ((bytes[i] as number) > 1) throw badRequest(`${label}: BOOL element ${i} is byte ${bytes[i]}, not 0 or 1`);
    }
  }
  return bytesAsTyped(dtype, bytes);
}

function fromContents(label: string, dtype: DType, count: number, contents: InferTensorContents): HostTypedArray {
  const list = LIST_OF[dtype];
  const name = kserveName(dtype);
  if (list === undefined) {
    throw badRequest(`${label}: ${name} has no typed contents list; send its bytes in raw_input_contents`);
  }
  for (const other of LISTS) {
    if (other !== list && (contents[other] as readonly unknown[]).length > 0) {
      throw badRequest(`${label}: ${name} elements go in contents.${snake(list)}, not contents.${snake(other)}`);
    }
  }
  const values = contents[list] as readonly (number | bigint | boolean)[];
  if (values.length !== count) {
    throw badRequest(`${label}: contents.${snake(list)} has ${values.length} elements but the shape needs ${count}`);
  }
  switch (dtype) {
    case "bool":
      return Uint8Array.from(values as readonly boolean[], (v) => (v ? 1 : 0));
    case "i64":
      return BigInt64Array.from(values as readonly bigint[]);
    case "u64":
      return BigUint64Array.from(values as readonly bigint[]);
    case "f32":
      return Float32Array.from(values as readonly number[]);
    case "f64":
      return Float64Array.from(values as readonly number[]);
    case "i32":
      return Int32Array.from(values as readonly number[]);
    case "u32":
      return Uint32Array.from(values as readonly number[]);
    default: {
      const [min, max] = INT_RANGES[dtype] as readonly [number, number];
      const numbers = values as readonly number[];
      for (let i = 0; i < numbers.length; i++) {
        const v = numbers[i] as number;
        if (v < min || v > max)
          throw badRequest(`${label}: element ${i} (${v}) is out of range for ${name} [${min}, ${max}]`);
      }
      const Out = { i8: Int8Array, i16: Int16Array, u8: Uint8Array, u16: Uint16Array }[
        dtype as "i8" | "i16" | "u8" | "u16"
      ];
      return Out.from(numbers);
    }
  }
}

function snake(list: string): string {
  return list.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

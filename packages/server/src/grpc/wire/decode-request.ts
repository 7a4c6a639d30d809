import type {
  InferParameter,
  ModelInferRequest,
  ModelInferRequest_InferInputTensor,
  ModelInferRequest_InferRequestedOutputTensor,
} from "../gen/grpc_service_pb.ts";

/**
 * The common ModelInferRequest read straight from the protobuf wire format: names, datatypes,
 * shapes, requested outputs and raw_input_contents (views of the request's bytes, no copy).
 * protobuf-es's generic reader costs more than the rest of a small request's decoding; this one
 * walks the bytes once and builds only the objects the request has. Anything it does not handle
 * (parameters, typed contents, unknown fields, non-ASCII strings, shape values of 2^49 or more,
 * bytes that are not a valid message) makes it return null, and protobuf-es decodes the message
 * instead: the outcome, errors included, is protobuf-es's. Field numbers are grpc_service.proto's.
 */
export function decodeInferRequestFast(bytes: Uint8Array): ModelInferRequest | null {
  const r = new Reader(bytes);
  const request: ModelInferRequest = {
    $typeName: "inference.ModelInferRequest",
    modelName: "",
    modelVersion: "",
    id: "",
    parameters: NO_PARAMETERS,
    inputs: [],
    outputs: [],
    rawInputContents: [],
  };
  while (r.pos < r.end) {
    const tag = r.varint32();
    if (tag < 0 || (tag & 7) !== LEN) return null;
    const end = r.lengthEnd();
    if (end < 0) return null;
    const field = tag >>> 3;
    switch (field) {
      case 1:
      case 2:
      case 3: {
        const s = r.ascii(end);
        if (s === null) return null;
        if (field === 1) request.modelName = s;
        else if (field === 2) request.modelVersion = s;
        else request.id = s;
        break;
      }
      case 5: {
        const input = readInput(r, end);
        if (input === null) return null;
        request.inputs.push(input);
        break;
      }
      case 6: {
        const output = readOutput(r, end);
        if (output === null) return null;
        request.outputs.push(output);
        break;
      }
      case 7:
        request.rawInputContents.push(bytes.subarray(r.pos, end));
        r.pos = end;
        break;
      default:
        return null;
    }
  }
  return request;
}

/** Never written to: a message read here has no parameters (protobuf-es decodes those that do). */
const NO_PARAMETERS: { [key: string]: InferParameter } = Object.freeze({}) as { [key: string]: InferParameter };

const VARINT = 0;
const LEN = 2;

function readInput(r: Reader, end: number): ModelInferRequest_InferInputTensor | null {
  const input: ModelInferRequest_InferInputTensor = {
    $typeName: "inference.ModelInferRequest.InferInputTensor",
    name: "",
    datatype: "",
    shape: [],
    parameters: NO_PARAMETERS,
  };
  while (r.pos < end) {
    const tag = r.varint32();
    if (tag < 0) return null;
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 3 && wire === VARINT) {
      // An unpacked shape element (parsers accept both encodings of a repeated scalar).
      const d = r.dimension(end);
      if (d < 0) return null;
      input.shape.push(BigInt(d));
      continue;
    }
    if (wire !== LEN) return null;
    const fieldEnd = r.lengthEnd();
    if (fieldEnd < 0 || fieldEnd > end) return null;
    if (field === 1 || field === 2) {
      const s = r.ascii(fieldEnd);
      if (s === null) return null;
      if (field === 1) input.name = s;
      else input.datatype = s;
    } else if (field === 3) {
      while (r.pos < fieldEnd) {
        const d = r.dimension(fieldEnd);
        if (d < 0) return null;
        input.shape.push(BigInt(d));
      }
    } else {
      return null;
    }
  }
  return r.pos === end ? input : null;
}

function readOutput(r: Reader, end: number): ModelInferRequest_InferRequestedOutputTensor | null {
  const output: ModelInferRequest_InferRequestedOutputTensor = {
    $typeName: "inference.ModelInferRequest.InferRequestedOutputTensor",
    name: "",
    parameters: NO_PARAMETERS,
  };
  while (r.pos < end) {
    const tag = r.varint32();
    if (tag !== ((1 << 3) | LEN)) return null;
    const fieldEnd = r.lengthEnd();
    if (fieldEnd < 0 || fieldEnd > end) return null;
    const s = r.ascii(fieldEnd);
    if (s === null) return null;
    output.name = s;
  }
  return r.pos === end ? output : null;
}

class Reader {
  pos = 0;
  readonly end: number;
  constructor(readonly bytes: Uint8Array) {
    this.end = bytes.byteLength;
  }

  /** A varint below 2^28 (tags, lengths of up to 256 MiB); -1 when it is longer or cut short. */
  varint32(): number {
    const b = this.bytes;
    let value = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (this.pos >= this.end) return -1;
      const byte = b[this.pos++] as number;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
    return -1;
  }

  /** Where a length-delimited field that starts here ends; -1 past the message's end. */
  lengthEnd(): number {
    const length = this.varint32();
    if (length < 0) return -1;
    const end = this.pos + length;
    return end <= this.end ? end : -1;
  }

  /** A shape element below 2^49 (seven varint bytes); -1 for anything else, negatives included. */
  dimension(end: number): number {
    const b = this.bytes;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= end) return -1;
      const byte = b[this.pos++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    return -1;
  }

  /** The bytes up to `end` as a string when all are ASCII (their UTF-8 is then themselves). */
  ascii(end: number): string | null {
    const b = this.bytes;
    let s = "";
    for (let i = this.pos; i < end; i++) {
      const c = b[i] as number;
      if (c >= 0x80) return null;
      s += String.fromCharCode(c);
    }
    this.pos = end;
    return s;
  }
}

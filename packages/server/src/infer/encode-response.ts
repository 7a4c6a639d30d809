import {
  type DType,
  type HostTensor,
  XlaserveError,
  bf16BitsToNumber,
  f16BitsToNumber,
  kserveName,
  tensorBytes,
} from "@xlaserve/core";
import type { SharedTensorRef } from "../shared-memory/tensor-params.ts";
import type { OutputPlan } from "./decode-request.ts";

const encoder = new TextEncoder();
// One Headers object for every JSON answer: Response copies it, and building Headers from a
// plain object on each request cost about 0.3 us of the ~1 us the Response constructor takes.
const JSON_INIT: ResponseInit = { headers: new Headers({ "content-type": "application/json" }) };

export interface ResponseHead {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string | undefined;
}

/**
 * Builds the infer response. The JSON is written by hand: typed arrays join straight into the
 * text (no intermediate number[]), and 64-bit integers keep every digit. Outputs asked for as
 * binary go after the JSON header (binary tensor data extension), which then switches the answer
 * to application/octet-stream with Inference-Header-Content-Length.
 */
export function encodeInferResponse(
  head: ResponseHead,
  plans: readonly OutputPlan[],
  results: ReadonlyMap<string, HostTensor>,
): Response {
  let json = headText(head.modelName, head.modelVersion);
  if (head.id !== undefined) json += `,"id":${JSON.stringify(head.id)}`;
  json += ',"outputs":[';
  const binaryParts: Uint8Array[] = [];
  let binaryBytes = 0;
  for (let i = 0; i < plans.length; i++) {
    const plan = plans[i] as OutputPlan;
    const tensor = results.get(plan.name);
    if (!tensor) throw new XlaserveError("INTERNAL", `the model returned no output "${plan.name}"`);
    json += (i > 0 ? "," : "") + outputHead(plan.name, tensor.dtype) + tensor.shape.join(",");
    if (plan.shared) {
      json += `],"parameters":${sharedParamsJson(plan.shared, tensor.data.byteLength)}}`;
    } else if (plan.binary) {
      const bytes = tensorBytes(tensor);
      binaryParts.push(bytes);
      binaryBytes += bytes.byteLength;
      json += `],"parameters":{"binary_data_size":${bytes.byteLength}}}`;
    } else {
      json += `],"data":[${dataToJson(tensor)}]}`;
    }
  }
  json += "]}";
  if (binaryParts.length === 0) {
    return new Response(json, JSON_INIT);
  }
  const header = encoder.encode(json);
  const body = new Uint8Array(header.byteLength + binaryBytes);
  body.set(header, 0);
  let at = header.byteLength;
  for (const part of binaryParts) {
    body.set(part, at);
    at += part.byteLength;
  }
  return new Response(body, {
    headers: {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(header.byteLength),
    },
  });
}

/** Where a shared-memory output went, as Triton reports it. */
function sharedParamsJson(shared: SharedTensorRef, bytes: number): string {
  const offset = shared.offset > 0 ? `,"shared_memory_offset":${shared.offset}` : "";
  return `{"shared_memory_region":${JSON.stringify(shared.region)},"shared_memory_byte_size":${bytes}${offset}}`;
}

/**
 * The fixed text around each answer's numbers, made once per model and output name: every piece
 * concatenated is one more fiber of the rope that Response then flattens, and with these the
 * answer has a few flat pieces besides its numbers (about 0.7 us less per MLP answer, most of it
 * in the Response constructor). Names only, never values, so nothing of an answer is reused.
 */
const heads = new Map<string, { version: string; text: string }>();
const outputHeads = new Map<string, Map<DType, string>>();
/** Enough for every model and output name of a repository; cleared past it, never grown without bound. */
const MAX_NAMES = 1024;

/** `{"model_name":...,"model_version":...` */
function headText(modelName: string, modelVersion: string): string {
  const known = heads.get(modelName);
  if (known !== undefined && known.version === modelVersion) return known.text;
  const text = `{"model_name":${JSON.stringify(modelName)},"model_version":${JSON.stringify(modelVersion)}`;
  if (heads.size >= MAX_NAMES) heads.clear();
  heads.set(modelName, { version: modelVersion, text });
  return text;
}

/** `{"name":...,"datatype":"...","shape":[` */
function outputHead(name: string, dtype: DType): string {
  let byType = outputHeads.get(name);
  if (byType === undefined) {
    if (outputHeads.size >= MAX_NAMES) outputHeads.clear();
    byType = new Map();
    outputHeads.set(name, byType);
  }
  let text = byType.get(dtype);
  if (text === undefined) {
    text = `{"name":${JSON.stringify(name)},"datatype":"${kserveName(dtype)}","shape":[`;
    byType.set(dtype, text);
  }
  return text;
}

/**
 * Elements as JSON text. Non-finite floats come out as the strings "NaN", "Infinity" and
 * "-Infinity": JSON has no literal for them, and the bare words Python's json.dumps writes make
 * the answer unreadable to every strict parser (JSON.parse, Go, Java). The decoder takes the same
 * strings (and Python's literals) as float input, and numpy turns them back into floats
 * (np.array(data, dtype=np.float32)); binary output keeps every bit, NaN payloads included.
 */
export function dataToJson(tensor: HostTensor): string {
  const data = tensor.data;
  switch (tensor.dtype) {
    case "bool": {
      const parts = new Array<string>(data.length);
      for (let i = 0; i < data.length; i++) parts[i] = data[i] ? "true" : "false";
      return parts.join(",");
    }
    case "f16":
    case "bf16": {
      const toNumber = tensor.dtype === "f16" ? f16BitsToNumber : bf16BitsToNumber;
      const parts = new Array<string>(data.length);
      for (let i = 0; i < data.length; i++) parts[i] = floatText(toNumber(data[i] as number));
      return parts.join(",");
    }
    case "f32":
    case "f64":
      return joinFloats(data as ArrayLike<number>);
    default:
      return joinNumbers(data as ArrayLike<number | bigint>);
  }
}

/**
 * Same text as Array.prototype.join(",") on a typed array (ToString of each element: exact for
 * every integer width), but a plain loop: about half the time of the
 * generic join for the short outputs of a small model, and the string it builds costs the
 * Response constructor less to flatten (bench/http.bench.ts --target http-only).
 */
function joinNumbers(data: ArrayLike<number | bigint>): string {
  if (data.length === 0) return "";
  let out = `${data[0]}`;
  for (let i = 1; i < data.length; i++) out += `,${data[i]}`;
  return out;
}

/** One float as JSON: the shortest round-trip number, or the quoted name of a non-finite value. */
function floatText(v: number): string {
  // v - v is 0 for every finite v and NaN for NaN and both infinities.
  if (v - v === 0) return `${v}`;
  return Number.isNaN(v) ? '"NaN"' : v > 0 ? '"Infinity"' : '"-Infinity"';
}

/** joinNumbers for FP32 / FP64, with non-finite values quoted (see dataToJson). */
function joinFloats(data: ArrayLike<number>): string {
  if (data.length === 0) return "";
  let out = floatText(data[0] as number);
  for (let i = 1; i < data.length; i++) {
    const v = data[i] as number;
    out += v - v === 0 ? `,${v}` : `,${floatText(v)}`;
  }
  return out;
}

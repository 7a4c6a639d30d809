/**
 * The infer response encoder as it was before the precomputed name texts (encode-response.ts),
 * kept verbatim as the reference the current encoder must match byte for byte.
 */
import {
  type HostTensor,
  XlaserveError,
  bf16BitsToNumber,
  f16BitsToNumber,
  kserveName,
  tensorBytes,
} from "@xlaserve/core";
import type { OutputPlan } from "../../src/infer/decode-request.ts";

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
  let json = `{"model_name":${JSON.stringify(head.modelName)},"model_version":${JSON.stringify(head.modelVersion)}`;
  if (head.id !== undefined) json += `,"id":${JSON.stringify(head.id)}`;
  json += ',"outputs":[';
  const binaryParts: Uint8Array[] = [];
  let binaryBytes = 0;
  for (let i = 0; i < plans.length; i++) {
    const plan = plans[i] as OutputPlan;
    const tensor = results.get(plan.name);
    if (!tensor) throw new XlaserveError("INTERNAL", `the model returned no output "${plan.name}"`);
    if (i > 0) json += ",";
    json += `{"name":${JSON.stringify(plan.name)},"datatype":"${kserveName(tensor.dtype)}","shape":[${tensor.shape.join(",")}]`;
    if (plan.binary) {
      const bytes = tensorBytes(tensor);
      binaryParts.push(bytes);
      binaryBytes += bytes.byteLength;
      json += `,"parameters":{"binary_data_size":${bytes.byteLength}}}`;
    } else {
      json += `,"data":[${dataToJson(tensor)}]}`;
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

/**
 * Elements as JSON text. Non-finite floats come out as NaN / Infinity / -Infinity, the literals
 * Python's json (tritonclient, KServe's client) reads back; a strict parser needs binary output.
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
      const parts = new Array<number>(data.length);
      for (let i = 0; i < data.length; i++) parts[i] = toNumber(data[i] as number);
      return parts.join(",");
    }
    default:
      return joinNumbers(data as ArrayLike<number | bigint>);
  }
}

/**
 * Same text as Array.prototype.join(",") on a typed array (ToString of each element: exact for
 * every integer width, NaN / Infinity as such), but a plain loop: about half the time of the
 * generic join for the short outputs of a small model, and the string it builds costs the
 * Response constructor less to flatten (bench/http.bench.ts --target http-only).
 */
function joinNumbers(data: ArrayLike<number | bigint>): string {
  if (data.length === 0) return "";
  let out = `${data[0]}`;
  for (let i = 1; i < data.length; i++) out += `,${data[i]}`;
  return out;
}

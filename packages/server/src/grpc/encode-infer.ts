import { type HostTensor, XlaserveError, kserveName, tensorBytes } from "@xlaserve/core";
import type { OutputPlan } from "../infer/decode-request.ts";
import type { ResponseHead } from "../infer/encode-response.ts";
import { SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION } from "../shared-memory/tensor-params.ts";
import { FRAME_HEADER_BYTES, Framed, writeFrameHeader } from "./transport/framing.ts";
import { type WireOutput, type WireParameter, encodeInferResponse } from "./wire/encode-response.ts";

const EMPTY: Uint8Array = new Uint8Array(0);
const NO_PARAMETERS: readonly WireParameter[] = [];

/**
 * The ModelInferResponse's gRPC frame: every output's bytes in raw_output_contents (as Triton
 * answers, for typed and raw requests alike), copied once from the result tensors into the frame
 * the transport sends as it is (the only copy of them on the way out). An
 * output written to a shared-memory region gets an empty entry, so the entries still line up with
 * `outputs`, and parameters naming where it went. `wrapField`: see encodeInferResponse.
 */
export function encodeGrpcInfer(
  head: ResponseHead,
  plans: readonly OutputPlan[],
  results: ReadonlyMap<string, HostTensor>,
  wrapField = 0,
): Framed {
  const outputs: WireOutput[] = [];
  for (const plan of plans) {
    const tensor = results.get(plan.name);
    if (!tensor) throw new XlaserveError("INTERNAL", `the model returned no output "${plan.name}"`);
    let parameters = NO_PARAMETERS;
    let bytes = EMPTY;
    if (plan.shared) {
      parameters = [
        { key: SHM_REGION, string: plan.shared.region },
        { key: SHM_BYTE_SIZE, int64: tensor.data.byteLength },
        ...(plan.shared.offset > 0 ? [{ key: SHM_OFFSET, int64: plan.shared.offset }] : []),
      ];
    } else {
      bytes = tensorBytes(tensor);
    }
    outputs.push({ name: plan.name, datatype: kserveName(tensor.dtype), shape: tensor.shape, parameters, bytes });
  }
  const bytes = encodeInferResponse(
    { modelName: head.modelName, modelVersion: head.modelVersion, id: head.id ?? "" },
    outputs,
    wrapField,
    FRAME_HEADER_BYTES,
  );
  writeFrameHeader(bytes, bytes.byteLength - FRAME_HEADER_BYTES);
  return new Framed(bytes);
}

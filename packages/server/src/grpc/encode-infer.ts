import { create } from "@bufbuild/protobuf";
import { type HostTensor, XlaserveError, kserveName, tensorBytes } from "@xlaserve/core";
import type { OutputPlan } from "../infer/decode-request.ts";
import type { ResponseHead } from "../infer/encode-response.ts";
import { SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION } from "../shared-memory/tensor-params.ts";
import {
  type InferParameter,
  InferParameterSchema,
  type ModelInferResponse,
  type ModelInferResponse_InferOutputTensor,
  ModelInferResponse_InferOutputTensorSchema,
  ModelInferResponseSchema,
} from "./gen/grpc_service_pb.ts";

const EMPTY = new Uint8Array(0);

/**
 * The ModelInferResponse: every output's bytes in raw_output_contents (as Triton answers, for
 * typed and raw requests alike), viewed from the result tensors without a copy. An output written
 * to a shared-memory region gets an empty entry, so the entries still line up with `outputs`,
 * and parameters naming where it went.
 */
export function encodeGrpcInfer(
  head: ResponseHead,
  plans: readonly OutputPlan[],
  results: ReadonlyMap<string, HostTensor>,
): ModelInferResponse {
  const outputs: ModelInferResponse_InferOutputTensor[] = [];
  const raw: Uint8Array[] = [];
  for (const plan of plans) {
    const tensor = results.get(plan.name);
    if (!tensor) throw new XlaserveError("INTERNAL", `the model returned no output "${plan.name}"`);
    const output = create(ModelInferResponse_InferOutputTensorSchema, {
      name: plan.name,
      datatype: kserveName(tensor.dtype),
      shape: tensor.shape.map((d) => BigInt(d)),
    });
    if (plan.shared) {
      output.parameters = {
        [SHM_REGION]: param({ case: "stringParam", value: plan.shared.region }),
        [SHM_BYTE_SIZE]: param({ case: "int64Param", value: BigInt(tensor.data.byteLength) }),
        ...(plan.shared.offset > 0
          ? { [SHM_OFFSET]: param({ case: "int64Param", value: BigInt(plan.shared.offset) }) }
          : {}),
      };
      raw.push(EMPTY);
    } else {
      raw.push(tensorBytes(tensor));
    }
    outputs.push(output);
  }
  return create(ModelInferResponseSchema, {
    modelName: head.modelName,
    modelVersion: head.modelVersion,
    id: head.id ?? "",
    outputs,
    rawOutputContents: raw,
  });
}

function param(choice: InferParameter["parameterChoice"]): InferParameter {
  return create(InferParameterSchema, { parameterChoice: choice });
}

/**
 * The descriptors generated from packages/server/proto carry exactly the official wire facts:
 * message and field names, numbers, types, cardinality, maps and oneofs, and the service's RPCs.
 * The tables below are those facts, transcribed by hand (not copied text) from
 *   - triton-inference-server/common protobuf/grpc_service.proto and protobuf/model_config.proto
 *     (BSD-3-Clause, NVIDIA CORPORATION & AFFILIATES), the superset xlaserve serves;
 *   - kserve/kserve docs/predict-api/v2/grpc_predict_v2.proto (Apache-2.0, kubeflow.org), whose
 *     messages are Triton's with the same numbers (its InferParameter stops at string_param = 3).
 * A field renumbered, retyped or dropped in our .proto fails here before any client notices.
 */
import { expect, test } from "bun:test";
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { file_grpc_service } from "../src/grpc/gen/grpc_service_pb.ts";
import { file_model_config } from "../src/grpc/gen/model_config_pb.ts";

const SD = "StatisticDuration";
const PARAMS = "map<string, InferParameter>";

/** grpc_service.proto: every message, every field (name = number: type). */
const OFFICIAL_SERVICE_MESSAGES: Record<string, string[]> = {
  ServerLiveRequest: [],
  ServerLiveResponse: ["bool live = 1"],
  ServerReadyRequest: [],
  ServerReadyResponse: ["bool ready = 1"],
  ModelReadyRequest: ["string name = 1", "string version = 2"],
  ModelReadyResponse: ["bool ready = 1"],
  ServerMetadataRequest: [],
  ServerMetadataResponse: ["string name = 1", "string version = 2", "repeated string extensions = 3"],
  ModelMetadataRequest: ["string name = 1", "string version = 2"],
  ModelMetadataResponse: [
    "string name = 1",
    "repeated string versions = 2",
    "string platform = 3",
    "repeated ModelMetadataResponse.TensorMetadata inputs = 4",
    "repeated ModelMetadataResponse.TensorMetadata outputs = 5",
  ],
  "ModelMetadataResponse.TensorMetadata": ["string name = 1", "string datatype = 2", "repeated int64 shape = 3"],
  InferParameter: [
    "oneof parameter_choice bool bool_param = 1",
    "oneof parameter_choice int64 int64_param = 2",
    "oneof parameter_choice string string_param = 3",
    "oneof parameter_choice double double_param = 4",
    "oneof parameter_choice uint64 uint64_param = 5",
  ],
  InferTensorContents: [
    "repeated bool bool_contents = 1",
    "repeated int32 int_contents = 2",
    "repeated int64 int64_contents = 3",
    "repeated uint32 uint_contents = 4",
    "repeated uint64 uint64_contents = 5",
    "repeated float fp32_contents = 6",
    "repeated double fp64_contents = 7",
    "repeated bytes bytes_contents = 8",
  ],
  ModelInferRequest: [
    "string model_name = 1",
    "string model_version = 2",
    "string id = 3",
    `${PARAMS} parameters = 4`,
    "repeated ModelInferRequest.InferInputTensor inputs = 5",
    "repeated ModelInferRequest.InferRequestedOutputTensor outputs = 6",
    "repeated bytes raw_input_contents = 7",
  ],
  "ModelInferRequest.InferInputTensor": [
    "string name = 1",
    "string datatype = 2",
    "repeated int64 shape = 3",
    `${PARAMS} parameters = 4`,
    "InferTensorContents contents = 5",
  ],
  "ModelInferRequest.InferRequestedOutputTensor": ["string name = 1", `${PARAMS} parameters = 2`],
  ModelInferResponse: [
    "string model_name = 1",
    "string model_version = 2",
    "string id = 3",
    `${PARAMS} parameters = 4`,
    "repeated ModelInferResponse.InferOutputTensor outputs = 5",
    "repeated bytes raw_output_contents = 6",
  ],
  "ModelInferResponse.InferOutputTensor": [
    "string name = 1",
    "string datatype = 2",
    "repeated int64 shape = 3",
    `${PARAMS} parameters = 4`,
    "InferTensorContents contents = 5",
  ],
  ModelStreamInferResponse: ["string error_message = 1", "ModelInferResponse infer_response = 2"],
  ModelConfigRequest: ["string name = 1", "string version = 2"],
  ModelConfigResponse: ["ModelConfig config = 1"],
  ModelStatisticsRequest: ["string name = 1", "string version = 2"],
  StatisticDuration: ["uint64 count = 1", "uint64 ns = 2"],
  InferStatistics: [
    `${SD} success = 1`,
    `${SD} fail = 2`,
    `${SD} queue = 3`,
    `${SD} compute_input = 4`,
    `${SD} compute_infer = 5`,
    `${SD} compute_output = 6`,
    `${SD} cache_hit = 7`,
    `${SD} cache_miss = 8`,
  ],
  InferBatchStatistics: [
    "uint64 batch_size = 1",
    `${SD} compute_input = 2`,
    `${SD} compute_infer = 3`,
    `${SD} compute_output = 4`,
  ],
  InferResponseStatistics: [
    `${SD} compute_infer = 1`,
    `${SD} compute_output = 2`,
    `${SD} success = 3`,
    `${SD} fail = 4`,
    `${SD} empty_response = 5`,
    `${SD} cancel = 6`,
  ],
  MemoryUsage: ["string type = 1", "int64 id = 2", "uint64 byte_size = 3"],
  ModelStatistics: [
    "string name = 1",
    "string version = 2",
    "uint64 last_inference = 3",
    "uint64 inference_count = 4",
    "uint64 execution_count = 5",
    "InferStatistics inference_stats = 6",
    "repeated InferBatchStatistics batch_stats = 7",
    "repeated MemoryUsage memory_usage = 8",
    "map<string, InferResponseStatistics> response_stats = 9",
  ],
  ModelStatisticsResponse: ["repeated ModelStatistics model_stats = 1"],
  ModelRepositoryParameter: [
    "oneof parameter_choice bool bool_param = 1",
    "oneof parameter_choice int64 int64_param = 2",
    "oneof parameter_choice string string_param = 3",
    "oneof parameter_choice bytes bytes_param = 4",
  ],
  RepositoryIndexRequest: ["string repository_name = 1", "bool ready = 2"],
  RepositoryIndexResponse: ["repeated RepositoryIndexResponse.ModelIndex models = 1"],
  "RepositoryIndexResponse.ModelIndex": [
    "string name = 1",
    "string version = 2",
    "string state = 3",
    "string reason = 4",
  ],
  RepositoryModelLoadRequest: [
    "string repository_name = 1",
    "string model_name = 2",
    "map<string, ModelRepositoryParameter> parameters = 3",
  ],
  RepositoryModelLoadResponse: [],
  RepositoryModelUnloadRequest: [
    "string repository_name = 1",
    "string model_name = 2",
    "map<string, ModelRepositoryParameter> parameters = 3",
  ],
  RepositoryModelUnloadResponse: [],
  SystemSharedMemoryStatusRequest: ["string name = 1"],
  SystemSharedMemoryStatusResponse: ["map<string, SystemSharedMemoryStatusResponse.RegionStatus> regions = 1"],
  "SystemSharedMemoryStatusResponse.RegionStatus": [
    "string name = 1",
    "string key = 2",
    "uint64 offset = 3",
    "uint64 byte_size = 4",
  ],
  SystemSharedMemoryRegisterRequest: ["string name = 1", "string key = 2", "uint64 offset = 3", "uint64 byte_size = 4"],
  SystemSharedMemoryRegisterResponse: [],
  SystemSharedMemoryUnregisterRequest: ["string name = 1"],
  SystemSharedMemoryUnregisterResponse: [],
  CudaSharedMemoryStatusRequest: ["string name = 1"],
  CudaSharedMemoryStatusResponse: ["map<string, CudaSharedMemoryStatusResponse.RegionStatus> regions = 1"],
  "CudaSharedMemoryStatusResponse.RegionStatus": ["string name = 1", "uint64 device_id = 2", "uint64 byte_size = 3"],
  CudaSharedMemoryRegisterRequest: [
    "string name = 1",
    "bytes raw_handle = 2",
    "int64 device_id = 3",
    "uint64 byte_size = 4",
  ],
  CudaSharedMemoryRegisterResponse: [],
  CudaSharedMemoryUnregisterRequest: ["string name = 1"],
  CudaSharedMemoryUnregisterResponse: [],
};

/** ReactantServer.jl's namespace probe (its proto_src and client): not in Triton's file. */
const REACTANT_MESSAGES: Record<string, string[]> = {
  IsSameIPCNamespaceRequest: ["string name = 1"],
  IsSameIPCNamespaceResponse: ["bool same = 1"],
};

/** Triton's RPCs: name, kind, request, response. */
const OFFICIAL_RPCS = [
  "ServerLive unary ServerLiveRequest ServerLiveResponse",
  "ServerReady unary ServerReadyRequest ServerReadyResponse",
  "ModelReady unary ModelReadyRequest ModelReadyResponse",
  "ServerMetadata unary ServerMetadataRequest ServerMetadataResponse",
  "ModelMetadata unary ModelMetadataRequest ModelMetadataResponse",
  "ModelInfer unary ModelInferRequest ModelInferResponse",
  "ModelStreamInfer bidi_streaming ModelInferRequest ModelStreamInferResponse",
  "ModelConfig unary ModelConfigRequest ModelConfigResponse",
  "ModelStatistics unary ModelStatisticsRequest ModelStatisticsResponse",
  "RepositoryIndex unary RepositoryIndexRequest RepositoryIndexResponse",
  "RepositoryModelLoad unary RepositoryModelLoadRequest RepositoryModelLoadResponse",
  "RepositoryModelUnload unary RepositoryModelUnloadRequest RepositoryModelUnloadResponse",
  "SystemSharedMemoryStatus unary SystemSharedMemoryStatusRequest SystemSharedMemoryStatusResponse",
  "SystemSharedMemoryRegister unary SystemSharedMemoryRegisterRequest SystemSharedMemoryRegisterResponse",
  "SystemSharedMemoryUnregister unary SystemSharedMemoryUnregisterRequest SystemSharedMemoryUnregisterResponse",
  "CudaSharedMemoryStatus unary CudaSharedMemoryStatusRequest CudaSharedMemoryStatusResponse",
  "CudaSharedMemoryRegister unary CudaSharedMemoryRegisterRequest CudaSharedMemoryRegisterResponse",
  "CudaSharedMemoryUnregister unary CudaSharedMemoryUnregisterRequest CudaSharedMemoryUnregisterResponse",
];
/** Served by Triton, not by xlaserve: a client calling them gets UNIMPLEMENTED. */
const TRITON_ONLY_RPCS = ["TraceSetting", "LogSettings"];

/**
 * model_config.proto: the fields xlaserve declares of Triton's (many more exist there; proto3
 * decoders skip what they do not know, so a subset with the official numbers is compatible).
 */
const OFFICIAL_MODEL_CONFIG: Record<string, string[]> = {
  ModelVersionPolicy: [
    "oneof policy_choice ModelVersionPolicy.Latest latest = 1",
    "oneof policy_choice ModelVersionPolicy.All all = 2",
    "oneof policy_choice ModelVersionPolicy.Specific specific = 3",
  ],
  "ModelVersionPolicy.Latest": ["uint32 num_versions = 1"],
  "ModelVersionPolicy.All": [],
  "ModelVersionPolicy.Specific": ["repeated int64 versions = 1"],
  ModelInput: ["string name = 1", "DataType data_type = 2", "repeated int64 dims = 4"],
  ModelOutput: ["string name = 1", "DataType data_type = 2", "repeated int64 dims = 3"],
  ModelConfig: [
    "string name = 1",
    "string platform = 2",
    "ModelVersionPolicy version_policy = 3",
    "int32 max_batch_size = 4",
    "repeated ModelInput input = 5",
    "repeated ModelOutput output = 6",
    "string backend = 17",
  ],
};
const OFFICIAL_DATA_TYPES = [
  "TYPE_INVALID",
  "TYPE_BOOL",
  "TYPE_UINT8",
  "TYPE_UINT16",
  "TYPE_UINT32",
  "TYPE_UINT64",
  "TYPE_INT8",
  "TYPE_INT16",
  "TYPE_INT32",
  "TYPE_INT64",
  "TYPE_FP16",
  "TYPE_FP32",
  "TYPE_FP64",
  "TYPE_STRING",
  "TYPE_BF16",
].map((name, number) => `${name} = ${number}`);

const local = (typeName: string) => typeName.replace(/^inference\./, "");

function typeOf(field: DescField): string {
  switch (field.fieldKind) {
    case "scalar":
      return ScalarType[field.scalar].toLowerCase();
    case "enum":
      return local(field.enum.typeName);
    case "message":
      return local(field.message.typeName);
    case "list":
      return `repeated ${
        field.listKind === "scalar"
          ? ScalarType[field.scalar].toLowerCase()
          : local(field.listKind === "enum" ? field.enum.typeName : field.message.typeName)
      }`;
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? ScalarType[field.scalar].toLowerCase()
          : local(field.mapKind === "enum" ? field.enum.typeName : field.message.typeName);
      return `map<${ScalarType[field.mapKey].toLowerCase()}, ${value}>`;
    }
  }
}

function declared(message: DescMessage): string[] {
  return message.fields.map((f) => `${f.oneof ? `oneof ${f.oneof.name} ` : ""}${typeOf(f)} ${f.name} = ${f.number}`);
}

function allMessages(messages: readonly DescMessage[]): DescMessage[] {
  return messages.flatMap((m) => [m, ...allMessages(m.nestedMessages)]);
}

test("every message of grpc_service.proto has exactly Triton's fields (ReactantServer's probe aside)", () => {
  const ours = Object.fromEntries(allMessages(file_grpc_service.messages).map((m) => [local(m.typeName), declared(m)]));
  expect(file_grpc_service.proto.package).toBe("inference");
  expect(ours).toEqual({ ...OFFICIAL_SERVICE_MESSAGES, ...REACTANT_MESSAGES });
});

test("inference.GRPCInferenceService has Triton's RPCs (bar trace and log settings) and IsSameIPCNamespace", () => {
  const [service, ...others] = file_grpc_service.services;
  expect(others).toEqual([]);
  expect(service?.typeName).toBe("inference.GRPCInferenceService");
  const rpcs = (service?.methods ?? []).map(
    (m) => `${m.name} ${m.methodKind} ${local(m.input.typeName)} ${local(m.output.typeName)}`,
  );
  expect(rpcs).toEqual([
    ...OFFICIAL_RPCS,
    "IsSameIPCNamespace unary IsSameIPCNamespaceRequest IsSameIPCNamespaceResponse",
  ]);
  for (const name of TRITON_ONLY_RPCS) expect(rpcs.some((r) => r.startsWith(`${name} `))).toBe(false);
});

test("model_config.proto declares Triton's numbers for every field it keeps, and the whole DataType enum", () => {
  const ours = Object.fromEntries(allMessages(file_model_config.messages).map((m) => [local(m.typeName), declared(m)]));
  expect(file_model_config.proto.package).toBe("inference");
  expect(ours).toEqual(OFFICIAL_MODEL_CONFIG);
  const dataType = file_model_config.enums.find((e) => e.typeName === "inference.DataType");
  expect(dataType?.values.map((v) => `${v.name} = ${v.number}`)).toEqual(OFFICIAL_DATA_TYPES);
});

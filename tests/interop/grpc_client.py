"""Drives xlaserve's gRPC service from Python's grpcio, with stubs that grpcio-tools generates
from packages/server/proto at run time: a client stack nobody here wrote (grpc C-core, upb
protobuf, numpy, the standard library's POSIX shared memory).

    python grpc_client.py PROTO_DIR ADDRESS CASES.json   -> one JSON object on stdout

CASES.json: {"requests": [{"model", "inputs": [{"name", "datatype", "shape", "raw_b64"}]}],
             "shm_model", "shm_input", "shm_output"}
"""

import base64
import json
import os
import sys
import tempfile
from multiprocessing import shared_memory

import grpc
from grpc_tools import protoc
import numpy as np


def generate_stubs(proto_dir: str, out: str) -> None:
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    for name in ("model_config.proto", "grpc_service.proto"):
        code = protoc.main(
            ["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}", name]
        )
        if code != 0:
            raise SystemExit(f"protoc failed on {name} ({code})")
    sys.path.insert(0, out)


def main() -> None:
    proto_dir, address, cases_file = sys.argv[1:4]
    with open(cases_file) as f:
        cases = json.load(f)
    out = tempfile.mkdtemp(prefix="xlaserve-py-stubs-")
    generate_stubs(proto_dir, out)
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as rpc

    limit = 512 * 1024 * 1024
    channel = grpc.insecure_channel(
        address, options=[("grpc.max_send_message_length", limit), ("grpc.max_receive_message_length", limit)]
    )
    stub = rpc.GRPCInferenceServiceStub(channel)
    result = {}
    result["live"] = stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live
    result["ready"] = stub.ServerReady(pb.ServerReadyRequest(), timeout=30).ready
    meta = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=30)
    result["extensions"] = list(meta.extensions)

    answers = []
    for case in cases["requests"]:
        model_meta = stub.ModelMetadata(pb.ModelMetadataRequest(name=case["model"]), timeout=30)
        request = pb.ModelInferRequest(model_name=case["model"], id="py-" + case["model"])
        for spec in case["inputs"]:
            tensor = request.inputs.add()
            tensor.name = spec["name"]
            tensor.datatype = spec["datatype"]
            tensor.shape.extend(spec["shape"])
            request.raw_input_contents.append(base64.b64decode(spec["raw_b64"]))
        response = stub.ModelInfer(request, timeout=60)
        answers.append(
            {
                "model": case["model"],
                "metadata_inputs": [i.name for i in model_meta.inputs],
                "id": response.id,
                "outputs": [
                    {"name": o.name, "datatype": o.datatype, "shape": list(o.shape), "raw_b64": base64.b64encode(raw).decode()}
                    for o, raw in zip(response.outputs, response.raw_output_contents)
                ],
            }
        )
    result["answers"] = answers

    # Typed contents: the first FP32 request again, its elements in fp32_contents.
    first = cases["requests"][0]
    spec = first["inputs"][0]
    typed = pb.ModelInferRequest(model_name=first["model"])
    tensor = typed.inputs.add()
    tensor.name, tensor.datatype = spec["name"], spec["datatype"]
    tensor.shape.extend(spec["shape"])
    tensor.contents.fp32_contents.extend(np.frombuffer(base64.b64decode(spec["raw_b64"]), dtype=np.float32).tolist())
    typed_answer = stub.ModelInfer(typed, timeout=60)
    result["typed_raw_b64"] = [base64.b64encode(r).decode() for r in typed_answer.raw_output_contents]

    try:
        stub.ModelInfer(pb.ModelInferRequest(model_name="no-such-model"), timeout=30)
        result["unknown_model"] = "served"
    except grpc.RpcError as error:
        result["unknown_model"] = [error.code().name, error.details()]

    # System shared memory: a POSIX object made by Python's standard library.
    shm_in = cases["shm_input"]
    shm_out = cases["shm_output"]
    raw_in = base64.b64decode(shm_in["raw_b64"])
    region = shared_memory.SharedMemory(create=True, size=len(raw_in) + shm_out["byte_size"])
    try:
        key = "/" + region.name.lstrip("/")
        result["same_namespace"] = stub.IsSameIPCNamespace(pb.IsSameIPCNamespaceRequest(name=key), timeout=30).same
        region.buf[: len(raw_in)] = raw_in
        stub.SystemSharedMemoryRegister(
            pb.SystemSharedMemoryRegisterRequest(name="py", key=key, offset=0, byte_size=region.size), timeout=30
        )
        request = pb.ModelInferRequest(model_name=cases["shm_model"])
        tensor = request.inputs.add()
        tensor.name, tensor.datatype = shm_in["name"], shm_in["datatype"]
        tensor.shape.extend(shm_in["shape"])
        tensor.parameters["shared_memory_region"].string_param = "py"
        tensor.parameters["shared_memory_byte_size"].int64_param = len(raw_in)
        wanted = request.outputs.add()
        wanted.name = shm_out["name"]
        wanted.parameters["shared_memory_region"].string_param = "py"
        wanted.parameters["shared_memory_byte_size"].int64_param = shm_out["byte_size"]
        wanted.parameters["shared_memory_offset"].int64_param = len(raw_in)
        response = stub.ModelInfer(request, timeout=60)
        written = response.outputs[0].parameters["shared_memory_byte_size"].int64_param
        result["shm_output_b64"] = base64.b64encode(bytes(region.buf[len(raw_in) : len(raw_in) + written])).decode()
        result["shm_raw_entries"] = [len(r) for r in response.raw_output_contents]
        status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(), timeout=30)
        result["shm_regions"] = sorted(status.regions.keys())
        stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(name="py"), timeout=30)
    finally:
        region.close()
        region.unlink()
    channel.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()

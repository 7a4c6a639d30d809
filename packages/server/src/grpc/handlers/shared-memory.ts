import { XlaserveError } from "@xlaserve/core";
import { badRequest } from "../../http-error.ts";
import { type SharedMemoryRegistry, isSameIpcNamespace } from "../../shared-memory/registry.ts";
import { GRPCInferenceService } from "../gen/grpc_service_pb.ts";
import { type UnaryHandler, unary } from "../unary.ts";

const m = GRPCInferenceService.method;

function count(field: string, value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw badRequest(`${field} ${value} is beyond 2^53 bytes`);
  return Number(value);
}

/**
 * Triton's system shared memory extension and ReactantServer's namespace probe. CUDA shared
 * memory has no regions here: its status is empty and registering one is UNIMPLEMENTED, saying
 * to use system shared memory.
 */
export function sharedMemoryHandlers(sharedMemory: SharedMemoryRegistry): Record<string, UnaryHandler> {
  return {
    SystemSharedMemoryStatus: unary(m.systemSharedMemoryStatus, (r) => {
      const regions: Record<string, { name: string; key: string; offset: bigint; byteSize: bigint }> = {};
      for (const s of sharedMemory.status(r.name)) {
        regions[s.name] = { name: s.name, key: s.key, offset: BigInt(s.offset), byteSize: BigInt(s.byteSize) };
      }
      return { regions };
    }),
    SystemSharedMemoryRegister: unary(m.systemSharedMemoryRegister, (r) => {
      sharedMemory.register(r.name, r.key, count("offset", r.offset), count("byte_size", r.byteSize));
      return {};
    }),
    SystemSharedMemoryUnregister: unary(m.systemSharedMemoryUnregister, (r) => {
      sharedMemory.unregister(r.name);
      return {};
    }),
    CudaSharedMemoryStatus: unary(m.cudaSharedMemoryStatus, (r) => {
      if (r.name !== "") throw new XlaserveError("NOT_FOUND", `no CUDA shared-memory region "${r.name}" is registered`);
      return { regions: {} };
    }),
    CudaSharedMemoryRegister: unary(m.cudaSharedMemoryRegister, () => {
      throw new XlaserveError(
        "UNSUPPORTED",
        "CUDA shared memory is not supported by xlaserve; register a system shared-memory region instead",
      );
    }),
    CudaSharedMemoryUnregister: unary(m.cudaSharedMemoryUnregister, () => ({})),
    IsSameIPCNamespace: unary(m.isSameIPCNamespace, (r) => ({ same: isSameIpcNamespace(r.name) })),
  };
}

/**
 * System shared memory end to end on the real worker: a region registered over gRPC, inputs
 * read from it and outputs written into it over gRPC and REST, out-of-bounds tensors and
 * regions refused with messages naming the bounds, and nothing served from it once unregistered.
 */
import { describe, expect, test } from "bun:test";
import { status } from "@grpc/grpc-js";
import type { HostTensor } from "@xlaserve/core";
import { bytesOf, refused, restBytes } from "./grpc-support.ts";
import { inputs, mlpRequest, useGrpcWorker } from "./grpc-worker.ts";

const w = useGrpcWorker();

describe("system shared memory end to end", () => {
  test("register, infer from and into regions over gRPC and REST, out of bounds refused, unregister", async () => {
    const x = inputs("mlp", 4, 99);
    const input = bytesOf(x.get("features") as HostTensor);
    const obj = w.shm(64 * 1024);
    obj.bytes().set(input, 0);
    await w.client.call("systemSharedMemoryRegister", { name: "io", key: obj.key, offset: 0n, byteSize: 64n * 1024n });
    const rest = await restBytes(w.worker.url, "mlp", x);
    const params = (byteSize: number, offset: number) => ({
      shared_memory_region: { parameterChoice: { case: "stringParam" as const, value: "io" } },
      shared_memory_byte_size: { parameterChoice: { case: "int64Param" as const, value: BigInt(byteSize) } },
      shared_memory_offset: { parameterChoice: { case: "int64Param" as const, value: BigInt(offset) } },
    });
    const answer = await w.client.call("modelInfer", {
      modelName: "mlp",
      inputs: [{ name: "features", datatype: "FP32", shape: [4n, 64n], parameters: params(input.byteLength, 0) }],
      outputs: [{ name: "probabilities", parameters: params(160, 8192) }, { name: "logits" }],
    });
    expect(answer.rawOutputContents.map((b) => b.byteLength)).toEqual([0, 160]);
    const written = obj.bytes().slice(8192, 8192 + 160);
    expect(Buffer.from(written).equals(Buffer.from(rest.get("probabilities") as Uint8Array))).toBe(true);
    expect(
      Buffer.from(answer.rawOutputContents[1] as Uint8Array).equals(Buffer.from(rest.get("logits") as Uint8Array)),
    ).toBe(true);
    // The same region through REST.
    const viaRest = await fetch(`${w.worker.url}/v2/models/mlp/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          {
            name: "features",
            shape: [4, 64],
            datatype: "FP32",
            parameters: { shared_memory_region: "io", shared_memory_byte_size: input.byteLength },
          },
        ],
        outputs: [
          {
            name: "logits",
            parameters: { shared_memory_region: "io", shared_memory_byte_size: 160, shared_memory_offset: 16384 },
          },
        ],
      }),
    });
    expect(viaRest.status).toBe(200);
    expect(
      Buffer.from(obj.bytes().slice(16384, 16384 + 160)).equals(Buffer.from(rest.get("logits") as Uint8Array)),
    ).toBe(true);
    // Out of bounds, either way.
    const outside = await refused(
      w.client.call("modelInfer", {
        modelName: "mlp",
        inputs: [
          {
            name: "features",
            datatype: "FP32",
            shape: [4n, 64n],
            parameters: params(input.byteLength, 64 * 1024 - 100),
          },
        ],
      }),
    );
    expect([outside.code, outside.details]).toEqual([
      status.INVALID_ARGUMENT,
      `input "features": 1024 bytes at offset 65436 run past the end of shared-memory region "io" (65536 bytes)`,
    ]);
    const tooBig = await refused(
      w.client.call("systemSharedMemoryRegister", { name: "big", key: obj.key, offset: 0n, byteSize: 1n << 20n }),
    );
    expect([tooBig.code, tooBig.details]).toEqual([
      status.INVALID_ARGUMENT,
      `shared-memory region "big": offset 0 + byte_size 1048576 is past the end of "${obj.key}" (65536 bytes)`,
    ]);
    await w.client.call("systemSharedMemoryUnregister", { name: "io" });
    const after = await refused(
      w.client.call("modelInfer", {
        modelName: "mlp",
        inputs: [{ name: "features", datatype: "FP32", shape: [4n, 64n], parameters: params(input.byteLength, 0) }],
      }),
    );
    expect(after.details).toBe('input "features": shared-memory region "io" is not registered');
    expect((await w.client.call("modelInfer", mlpRequest())).outputs.length).toBe(2);
  });
});

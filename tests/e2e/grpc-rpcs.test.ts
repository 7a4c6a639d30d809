/**
 * Every RPC of inference.GRPCInferenceService on the real worker (CPU engine, the example
 * bundles) with grpc-js as the client, and each one's answer against REST's where REST has one.
 */
import { describe, expect, test } from "bun:test";
import { status } from "@grpc/grpc-js";
import { refused, restBytes } from "./grpc-support.ts";
import { MODELS, inputs, mlpRequest, useGrpcWorker } from "./grpc-worker.ts";

const w = useGrpcWorker();

describe("every RPC of the service on the worker", () => {
  test("the worker serves gRPC on its own port beside REST", () => {
    expect(w.worker.grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(w.worker.grpcAddress?.endsWith(`:${new URL(w.worker.url).port}`)).toBe(false);
  });

  test("ServerLive, ServerReady, ServerMetadata", async () => {
    expect((await w.client.call("serverLive", {})).live).toBe(true);
    expect((await w.client.call("serverReady", {})).ready).toBe(true);
    const meta = await w.client.call("serverMetadata", {});
    expect(meta.name).toBe("xlaserve");
    expect(meta.extensions).toEqual(expect.arrayContaining(["system_shared_memory", "model_repository", "statistics"]));
    const rest = await (await fetch(`${w.worker.url}/v2`)).json();
    expect(meta.extensions).toEqual(rest.extensions);
    expect(meta.version).toBe(rest.version);
  });

  test("ModelReady, ModelMetadata and ModelConfig of every example model match REST", async () => {
    for (const name of Object.keys(MODELS)) {
      expect((await w.client.call("modelReady", { name })).ready).toBe(true);
      const meta = await w.client.call("modelMetadata", { name });
      const rest = await (await fetch(`${w.worker.url}/v2/models/${name}`)).json();
      expect(meta.versions).toEqual(rest.versions);
      expect(meta.platform).toBe(rest.platform);
      const tensors = (list: { name: string; datatype: string; shape: bigint[] }[]) =>
        list.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(Number) }));
      expect(tensors(meta.inputs)).toEqual(rest.inputs);
      expect(tensors(meta.outputs)).toEqual(rest.outputs);
      const { config } = await w.client.call("modelConfig", { name });
      const restConfig = await (await fetch(`${w.worker.url}/v2/models/${name}/config`)).json();
      expect(config?.maxBatchSize).toBe(restConfig.max_batch_size);
      expect(config?.input.map((i) => i.dims.map(Number))).toEqual(
        restConfig.input.map((i: { dims: number[] }) => i.dims),
      );
    }
  });

  test("ModelStatistics counts gRPC and REST requests alike", async () => {
    const before = (await w.client.call("modelStatistics", { name: "mlp" })).modelStats[0];
    await w.client.call("modelInfer", mlpRequest());
    await restBytes(w.worker.url, "mlp", inputs("mlp", 2, 3));
    const after = (await w.client.call("modelStatistics", { name: "mlp" })).modelStats[0];
    expect(Number(after?.inferenceCount) - Number(before?.inferenceCount)).toBe(3);
    const all = await w.client.call("modelStatistics", {});
    expect(all.modelStats.map((s) => s.name).sort()).toEqual(["cnn", "mlp", "transformer"]);
  });

  test("RepositoryIndex, RepositoryModelUnload and RepositoryModelLoad (bearer token in metadata)", async () => {
    const index = await w.client.call("repositoryIndex", {});
    expect(index.models.map((m) => [m.name, m.state]).sort()).toEqual([
      ["cnn", "READY"],
      ["mlp", "READY"],
      ["transformer", "READY"],
    ]);
    const wrong = await refused(
      w.client.call("repositoryModelUnload", { modelName: "cnn" }, { metadata: { authorization: "Bearer nope" } }),
    );
    expect([wrong.code, wrong.details]).toEqual([status.UNAUTHENTICATED, "the bearer token is not valid"]);
    const auth = { metadata: { authorization: "Bearer tok" } };
    await w.client.call("repositoryModelUnload", { modelName: "cnn" }, auth);
    const gone = await refused(w.client.call("modelReady", { name: "cnn" }));
    expect(gone.code).toBe(status.NOT_FOUND);
    await w.client.call("repositoryModelLoad", { modelName: "cnn" }, auth);
    expect((await w.client.call("modelReady", { name: "cnn" })).ready).toBe(true);
    const missing = await refused(w.client.call("repositoryModelLoad", { modelName: "nope" }, auth));
    expect(missing.code).toBe(status.NOT_FOUND);
  }, 60_000);

  test("SystemSharedMemory Status / Register / Unregister, IsSameIPCNamespace, CUDA status", async () => {
    const obj = w.shm(4096);
    expect((await w.client.call("isSameIPCNamespace", { name: obj.key })).same).toBe(true);
    expect((await w.client.call("isSameIPCNamespace", { name: "/xlaserve-absent" })).same).toBe(false);
    await w.client.call("systemSharedMemoryRegister", { name: "rpc", key: obj.key, offset: 16n, byteSize: 1024n });
    const statusAll = await w.client.call("systemSharedMemoryStatus", {});
    expect(statusAll.regions.rpc).toMatchObject({ key: obj.key, offset: 16n, byteSize: 1024n });
    const rest = await (await fetch(`${w.worker.url}/v2/systemsharedmemory/status`)).json();
    expect(rest).toEqual([{ name: "rpc", key: obj.key, offset: 16, byte_size: 1024 }]);
    await w.client.call("systemSharedMemoryUnregister", { name: "rpc" });
    expect((await w.client.call("systemSharedMemoryStatus", {})).regions).toEqual({});
    expect((await w.client.call("cudaSharedMemoryStatus", {})).regions).toEqual({});
  });
});

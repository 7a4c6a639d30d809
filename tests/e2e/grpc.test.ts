/**
 * The gRPC service of the real worker (CPU engine, the example bundles), with grpc-js as the
 * client: every RPC, every example model through typed and raw contents against REST's answers,
 * malformed requests, a deadline, ModelStreamInfer and system shared memory end to end.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { Metadata, type ServiceError, credentials, makeGenericClientConstructor, status } from "@grpc/grpc-js";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import { ModelInferRequestSchema } from "../../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { ShmObject } from "../../packages/server/test/support/shm-object.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type InferInit, bytesOf, exampleInput, inferRequest, refused, restBytes } from "./grpc-support.ts";
import { type TempRepo, collectLogs, makeRepo } from "./helpers.ts";

const MODELS: Record<string, { input: string; dtype: "f32" | "i32"; item: number[]; outputs: string[] }> = {
  mlp: { input: "features", dtype: "f32", item: [64], outputs: ["probabilities", "logits"] },
  cnn: { input: "image", dtype: "f32", item: [32, 32, 3], outputs: ["logits"] },
  transformer: { input: "tokens", dtype: "i32", item: [16], outputs: ["logits"] },
};

let repo: TempRepo;
let worker: StartedWorker;
let client: InferenceClient;
const objects: ShmObject[] = [];

beforeAll(async () => {
  repo = makeRepo();
  worker = await startCpuWorker(repo, collectLogs().logger, {
    server: { authToken: "tok" },
    repository: { dynamic: false },
  });
  client = new InferenceClient(worker.grpcAddress as string);
}, 120_000);

afterAll(async () => {
  client?.close();
  await worker?.stop();
  repo?.cleanup();
  for (const o of objects) o.remove();
});

function inputs(model: string, batch: number, seed: number): Map<string, HostTensor> {
  const m = MODELS[model] as (typeof MODELS)[string];
  return new Map([[m.input, exampleInput(m.dtype, [batch, ...m.item], seed)]]);
}

const mlpRequest = (): InferInit => inferRequest("mlp", inputs("mlp", 1, 7), false);

describe("every RPC of the service on the worker", () => {
  test("the worker serves gRPC on its own port beside REST", () => {
    expect(worker.grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(worker.grpcAddress?.endsWith(`:${new URL(worker.url).port}`)).toBe(false);
  });

  test("ServerLive, ServerReady, ServerMetadata", async () => {
    expect((await client.call("serverLive", {})).live).toBe(true);
    expect((await client.call("serverReady", {})).ready).toBe(true);
    const meta = await client.call("serverMetadata", {});
    expect(meta.name).toBe("xlaserve");
    expect(meta.extensions).toEqual(expect.arrayContaining(["system_shared_memory", "model_repository", "statistics"]));
    const rest = await (await fetch(`${worker.url}/v2`)).json();
    expect(meta.extensions).toEqual(rest.extensions);
    expect(meta.version).toBe(rest.version);
  });

  test("ModelReady, ModelMetadata and ModelConfig of every example model match REST", async () => {
    for (const name of Object.keys(MODELS)) {
      expect((await client.call("modelReady", { name })).ready).toBe(true);
      const meta = await client.call("modelMetadata", { name });
      const rest = await (await fetch(`${worker.url}/v2/models/${name}`)).json();
      expect(meta.versions).toEqual(rest.versions);
      expect(meta.platform).toBe(rest.platform);
      const tensors = (list: { name: string; datatype: string; shape: bigint[] }[]) =>
        list.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(Number) }));
      expect(tensors(meta.inputs)).toEqual(rest.inputs);
      expect(tensors(meta.outputs)).toEqual(rest.outputs);
      const { config } = await client.call("modelConfig", { name });
      const restConfig = await (await fetch(`${worker.url}/v2/models/${name}/config`)).json();
      expect(config?.maxBatchSize).toBe(restConfig.max_batch_size);
      expect(config?.input.map((i) => i.dims.map(Number))).toEqual(
        restConfig.input.map((i: { dims: number[] }) => i.dims),
      );
    }
  });

  test("ModelStatistics counts gRPC and REST requests alike", async () => {
    const before = (await client.call("modelStatistics", { name: "mlp" })).modelStats[0];
    await client.call("modelInfer", mlpRequest());
    await restBytes(worker.url, "mlp", inputs("mlp", 2, 3));
    const after = (await client.call("modelStatistics", { name: "mlp" })).modelStats[0];
    expect(Number(after?.inferenceCount) - Number(before?.inferenceCount)).toBe(3);
    const all = await client.call("modelStatistics", {});
    expect(all.modelStats.map((s) => s.name).sort()).toEqual(["cnn", "mlp", "transformer"]);
  });

  test("RepositoryIndex, RepositoryModelUnload and RepositoryModelLoad (bearer token in metadata)", async () => {
    const index = await client.call("repositoryIndex", {});
    expect(index.models.map((m) => [m.name, m.state]).sort()).toEqual([
      ["cnn", "READY"],
      ["mlp", "READY"],
      ["transformer", "READY"],
    ]);
    const wrong = await refused(
      client.call("repositoryModelUnload", { modelName: "cnn" }, { metadata: { authorization: "Bearer nope" } }),
    );
    expect([wrong.code, wrong.details]).toEqual([status.UNAUTHENTICATED, "the bearer token is not valid"]);
    const auth = { metadata: { authorization: "Bearer tok" } };
    await client.call("repositoryModelUnload", { modelName: "cnn" }, auth);
    const gone = await refused(client.call("modelReady", { name: "cnn" }));
    expect(gone.code).toBe(status.NOT_FOUND);
    await client.call("repositoryModelLoad", { modelName: "cnn" }, auth);
    expect((await client.call("modelReady", { name: "cnn" })).ready).toBe(true);
    const missing = await refused(client.call("repositoryModelLoad", { modelName: "nope" }, auth));
    expect(missing.code).toBe(status.NOT_FOUND);
  }, 60_000);

  test("SystemSharedMemory Status / Register / Unregister, IsSameIPCNamespace, CUDA status", async () => {
    const obj = new ShmObject(4096);
    objects.push(obj);
    expect((await client.call("isSameIPCNamespace", { name: obj.key })).same).toBe(true);
    expect((await client.call("isSameIPCNamespace", { name: "/xlaserve-absent" })).same).toBe(false);
    await client.call("systemSharedMemoryRegister", { name: "rpc", key: obj.key, offset: 16n, byteSize: 1024n });
    const statusAll = await client.call("systemSharedMemoryStatus", {});
    expect(statusAll.regions.rpc).toMatchObject({ key: obj.key, offset: 16n, byteSize: 1024n });
    const rest = await (await fetch(`${worker.url}/v2/systemsharedmemory/status`)).json();
    expect(rest).toEqual([{ name: "rpc", key: obj.key, offset: 16, byte_size: 1024 }]);
    await client.call("systemSharedMemoryUnregister", { name: "rpc" });
    expect((await client.call("systemSharedMemoryStatus", {})).regions).toEqual({});
    expect((await client.call("cudaSharedMemoryStatus", {})).regions).toEqual({});
  });
});

describe("ModelInfer: every example model, typed and raw contents, byte-equal to REST", () => {
  for (const [model, spec] of Object.entries(MODELS)) {
    test(model, async () => {
      for (const batch of [1, 3]) {
        const x = inputs(model, batch, 11 + batch);
        const rest = await restBytes(worker.url, model, x);
        const raw = await client.call("modelInfer", { ...inferRequest(model, x, false), id: `raw-${batch}` });
        const typed = await client.call("modelInfer", inferRequest(model, x, true));
        expect(raw.id).toBe(`raw-${batch}`);
        expect(raw.outputs.map((o) => o.name)).toEqual(spec.outputs);
        for (let i = 0; i < spec.outputs.length; i++) {
          const name = spec.outputs[i] as string;
          const expected = rest.get(name) as Uint8Array;
          expect(expected.byteLength).toBeGreaterThan(0);
          expect(raw.outputs[i]?.shape.map(Number)[0]).toBe(batch);
          expect(Buffer.from(raw.rawOutputContents[i] as Uint8Array).equals(Buffer.from(expected))).toBe(true);
          expect(Buffer.from(typed.rawOutputContents[i] as Uint8Array).equals(Buffer.from(expected))).toBe(true);
        }
      }
    }, 60_000);
  }
});

describe("malformed requests: each its status and message, and the worker serves on", () => {
  const x = inputs("mlp", 1, 5).get("features") as HostTensor;
  const raw = bytesOf(x);
  const one = (over: Record<string, unknown>) => ({ name: "features", datatype: "FP32", shape: [1n, 64n], ...over });
  const int64 = (v: bigint) => ({ parameterChoice: { case: "int64Param" as const, value: v } });
  const str = (v: string) => ({ parameterChoice: { case: "stringParam" as const, value: v } });
  const cases: [string, InferInit, status, string][] = [
    [
      "unknown model",
      { modelName: "nope", inputs: [one({})], rawInputContents: [raw] },
      status.NOT_FOUND,
      'unknown model "nope"',
    ],
    [
      "unknown version",
      { modelName: "mlp", modelVersion: "9", inputs: [one({})], rawInputContents: [raw] },
      status.NOT_FOUND,
      'model "mlp" has no version "9"',
    ],
    ["no inputs", { modelName: "mlp" }, status.INVALID_ARGUMENT, "the request has no inputs"],
    [
      "unknown input",
      { modelName: "mlp", inputs: [one({ name: "x" })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'unknown input "x"; model "mlp" takes: features',
    ],
    [
      "input twice",
      { modelName: "mlp", inputs: [one({}), one({})], rawInputContents: [raw, raw] },
      status.INVALID_ARGUMENT,
      'input "features" appears more than once',
    ],
    [
      "wrong datatype",
      { modelName: "mlp", inputs: [one({ datatype: "FP64" })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      `input "features": datatype FP64 does not match the model's FP32`,
    ],
    [
      "unknown datatype",
      { modelName: "mlp", inputs: [one({ datatype: "FLOAT" })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'input "features": unknown datatype "FLOAT"; the model takes FP32',
    ],
    [
      "BYTES",
      { modelName: "mlp", inputs: [one({ datatype: "BYTES" })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'input "features": datatype BYTES is not supported; the model takes FP32',
    ],
    [
      "wrong rank",
      { modelName: "mlp", inputs: [one({ shape: [64n] })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'input "features": shape [64] has 1 axes but the model expects 2 ([-1, 64])',
    ],
    [
      "wrong fixed axis",
      { modelName: "mlp", inputs: [one({ shape: [1n, 63n] })], rawInputContents: [raw.subarray(4)] },
      status.INVALID_ARGUMENT,
      'input "features": shape [1, 63] axis 1 is 63 but the model expects 64 ([-1, 64])',
    ],
    [
      "batch 0",
      { modelName: "mlp", inputs: [one({ shape: [0n, 64n] })], rawInputContents: [new Uint8Array(0)] },
      status.INVALID_ARGUMENT,
      'input "features": batch size 0 (shape [0, 64]); a request needs at least one item',
    ],
    [
      "batch over the maximum",
      { modelName: "mlp", inputs: [one({ shape: [9n, 64n] })], rawInputContents: [new Uint8Array(9 * 256)] },
      status.INVALID_ARGUMENT,
      'input "features": batch size 9 (shape [9, 64]) exceeds the model\'s maximum batch size 8',
    ],
    [
      "negative axis",
      { modelName: "mlp", inputs: [one({ shape: [-1n, 64n] })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'input "features" (inputs[0]): shape[0] = -1 is not a non-negative integer below 2^53',
    ],
    [
      "raw entry of the wrong size",
      { modelName: "mlp", inputs: [one({})], rawInputContents: [raw.subarray(0, 100)] },
      status.INVALID_ARGUMENT,
      'input "features": raw_input_contents entry is 100 bytes but shape [1, 64] of FP32 needs 256',
    ],
    [
      "no data",
      { modelName: "mlp", inputs: [one({})] },
      status.INVALID_ARGUMENT,
      'input "features" has no data: give it contents, a raw_input_contents entry (the request has 0) or a shared-memory region',
    ],
    [
      "a raw entry too many",
      { modelName: "mlp", inputs: [one({})], rawInputContents: [raw, raw] },
      status.INVALID_ARGUMENT,
      "the request has 2 raw_input_contents entries but its inputs use 1",
    ],
    [
      "typed contents of the wrong count",
      { modelName: "mlp", inputs: [one({ contents: { fp32Contents: [1, 2, 3] } })] },
      status.INVALID_ARGUMENT,
      'input "features": contents.fp32_contents has 3 elements but the shape needs 64',
    ],
    [
      "typed contents in the wrong list",
      { modelName: "mlp", inputs: [one({ contents: { intContents: [1] } })] },
      status.INVALID_ARGUMENT,
      'input "features": FP32 elements go in contents.fp32_contents, not contents.int_contents',
    ],
    [
      "typed contents and raw contents",
      {
        modelName: "mlp",
        inputs: [one({ contents: { fp32Contents: Array.from(x.data as Float32Array) } })],
        rawInputContents: [raw],
      },
      status.INVALID_ARGUMENT,
      'input "features" has typed contents but the request also carries raw_input_contents; use one',
    ],
    [
      "unknown requested output",
      { modelName: "mlp", inputs: [one({})], rawInputContents: [raw], outputs: [{ name: "nope" }] },
      status.INVALID_ARGUMENT,
      'unknown requested output "nope"; model "mlp" produces: probabilities, logits',
    ],
    [
      "requested output twice",
      {
        modelName: "mlp",
        inputs: [one({})],
        rawInputContents: [raw],
        outputs: [{ name: "logits" }, { name: "logits" }],
      },
      status.INVALID_ARGUMENT,
      'requested output "logits" appears more than once',
    ],
    [
      "classification",
      {
        modelName: "mlp",
        inputs: [one({})],
        rawInputContents: [raw],
        outputs: [{ name: "logits", parameters: { classification: int64(3n) } }],
      },
      status.INVALID_ARGUMENT,
      'requested output "logits": the classification extension is not supported',
    ],
    [
      "a shared-memory region never registered",
      {
        modelName: "mlp",
        inputs: [one({ parameters: { shared_memory_region: str("r0"), shared_memory_byte_size: int64(256n) } })],
      },
      status.INVALID_ARGUMENT,
      'input "features": shared-memory region "r0" is not registered',
    ],
    [
      "a region without its byte size",
      { modelName: "mlp", inputs: [one({ parameters: { shared_memory_region: str("r0") } })] },
      status.INVALID_ARGUMENT,
      'input "features": parameters.shared_memory_region needs parameters.shared_memory_byte_size (the tensor\'s bytes in the region)',
    ],
    [
      "a parameter beyond 2^53",
      { modelName: "mlp", inputs: [one({ parameters: { big: int64(2n ** 60n) } })], rawInputContents: [raw] },
      status.INVALID_ARGUMENT,
      'input "features": parameters.big = 1152921504606846976 is beyond +-2^53',
    ],
  ];

  test(`${cases.length} malformed ModelInfer requests`, async () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
    for (const [what, request, code, message] of cases) {
      const e = await refused(client.call("modelInfer", request));
      expect([what, status[e.code], e.details]).toEqual([what, status[code], message]);
      // The worker serves on after each.
      const ok = await client.call("modelInfer", mlpRequest());
      expect(ok.outputs.length).toBe(2);
    }
  });

  test("bytes that are no ModelInferRequest are INVALID_ARGUMENT", async () => {
    const definition = {
      ModelInfer: {
        path: "/inference.GRPCInferenceService/ModelInfer",
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    };
    const Raw = makeGenericClientConstructor(definition, "Raw");
    const rawClient = new Raw(worker.grpcAddress as string, credentials.createInsecure()) as unknown as {
      ModelInfer(b: Buffer, m: Metadata, cb: (e: ServiceError | null) => void): void;
      close(): void;
    };
    const send = (b: Buffer) =>
      new Promise<ServiceError | null>((resolve) => rawClient.ModelInfer(b, new Metadata(), resolve));
    const garbage = await send(Buffer.from([0x2a, 0x05, 0x0a]));
    expect(garbage?.code).toBe(status.INVALID_ARGUMENT);
    expect(garbage?.details).toStartWith("the request is not a valid inference.ModelInferRequest message: ");
    rawClient.close();
    expect((await client.call("serverLive", {})).live).toBe(true);
  });
});

describe("ModelStreamInfer", () => {
  test("every example model on one stream, answers in order, a bad request in the middle", async () => {
    const stream = client.stream();
    const answers: { errorMessage: string; inferResponse?: { id: string; rawOutputContents: Uint8Array[] } }[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (m) => answers.push(m));
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    const sent: [string, Map<string, HostTensor>][] = [];
    let id = 0;
    for (const model of Object.keys(MODELS)) {
      const x = inputs(model, 2, 40 + id);
      sent.push([model, x]);
      stream.write(create(ModelInferRequestSchema, { ...inferRequest(model, x, false), id: String(id++) }));
      if (model === "cnn") stream.write(create(ModelInferRequestSchema, { modelName: "cnn", id: "bad" }));
    }
    stream.end();
    await done;
    expect(answers.map((a) => a.inferResponse?.id ?? a.errorMessage)).toEqual([
      "0",
      "1",
      "the request has no inputs",
      "2",
    ]);
    const ok = answers.filter((a) => a.errorMessage === "");
    for (let i = 0; i < sent.length; i++) {
      const [model, x] = sent[i] as [string, Map<string, HostTensor>];
      const rest = await restBytes(worker.url, model, x);
      const first = rest.get((MODELS[model] as (typeof MODELS)[string]).outputs[0] as string) as Uint8Array;
      expect(Buffer.from(ok[i]?.inferResponse?.rawOutputContents[0] as Uint8Array).equals(Buffer.from(first))).toBe(
        true,
      );
    }
  }, 60_000);
});

describe("system shared memory end to end", () => {
  test("register, infer from and into regions over gRPC and REST, out of bounds refused, unregister", async () => {
    const x = inputs("mlp", 4, 99);
    const input = bytesOf(x.get("features") as HostTensor);
    const obj = new ShmObject(64 * 1024);
    objects.push(obj);
    obj.bytes().set(input, 0);
    await client.call("systemSharedMemoryRegister", { name: "io", key: obj.key, offset: 0n, byteSize: 64n * 1024n });
    const rest = await restBytes(worker.url, "mlp", x);
    const params = (byteSize: number, offset: number) => ({
      shared_memory_region: { parameterChoice: { case: "stringParam" as const, value: "io" } },
      shared_memory_byte_size: { parameterChoice: { case: "int64Param" as const, value: BigInt(byteSize) } },
      shared_memory_offset: { parameterChoice: { case: "int64Param" as const, value: BigInt(offset) } },
    });
    const answer = await client.call("modelInfer", {
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
    const viaRest = await fetch(`${worker.url}/v2/models/mlp/infer`, {
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
      client.call("modelInfer", {
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
      client.call("systemSharedMemoryRegister", { name: "big", key: obj.key, offset: 0n, byteSize: 1n << 20n }),
    );
    expect([tooBig.code, tooBig.details]).toEqual([
      status.INVALID_ARGUMENT,
      `shared-memory region "big": offset 0 + byte_size 1048576 is past the end of "${obj.key}" (65536 bytes)`,
    ]);
    await client.call("systemSharedMemoryUnregister", { name: "io" });
    const after = await refused(
      client.call("modelInfer", {
        modelName: "mlp",
        inputs: [{ name: "features", datatype: "FP32", shape: [4n, 64n], parameters: params(input.byteLength, 0) }],
      }),
    );
    expect(after.details).toBe('input "features": shared-memory region "io" is not registered');
    expect((await client.call("modelInfer", mlpRequest())).outputs.length).toBe(2);
  });
});

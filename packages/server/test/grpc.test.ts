import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { ModelInferRequestSchema } from "../src/grpc/gen/grpc_service_pb.ts";
import { rawInferClient } from "../src/grpc/raw-client.ts";
import { DataType } from "../src/grpc/gen/model_config_pb.ts";
import { type GrpcHarness, refused, startGrpcHarness } from "./support/grpc-harness.ts";
import { type Json, postJson } from "./support/harness.ts";
import { FAULT_CODES } from "./support/test-models.ts";

let h: GrpcHarness;
beforeAll(async () => {
  h = await startGrpcHarness({ authToken: "s3cret" });
});
afterAll(() => h.stop());

function f32(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** A copy with its own buffer, so typed views of it start aligned. */
function own(bytes: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(bytes);
}

describe("gRPC: health, metadata, configuration, statistics, repository", () => {
  test("ServerLive, ServerReady, ServerMetadata (with the system_shared_memory extension)", async () => {
    expect((await h.client.call("serverLive", {})).live).toBe(true);
    // Strict readiness (the default): the test registry's "cold" is still loading and "broken"
    // failed to load, so the worker is not ready although other models serve.
    expect((await h.client.call("serverReady", {})).ready).toBe(false);
    for (const name of ["cold", "broken"]) {
      const e = h.registry.repositoryIndex().find((x) => x.name === name);
      expect(e?.state).not.toBe("READY");
    }
    const meta = await h.client.call("serverMetadata", {});
    expect(meta.name).toBe("xlaserve");
    expect(meta.extensions).toContain("system_shared_memory");
    expect(meta.extensions).toContain("binary_tensor_data");
  });

  test("ModelReady and ModelMetadata: REST's content; unknown model or version NOT_FOUND", async () => {
    expect((await h.client.call("modelReady", { name: "affine" })).ready).toBe(true);
    expect((await h.client.call("modelReady", { name: "cold" })).ready).toBe(false);
    const meta = await h.client.call("modelMetadata", { name: "affine", version: "1" });
    expect(meta.versions).toEqual(["1"]);
    expect(meta.inputs.map((i) => [i.name, i.datatype, i.shape.map(Number)])).toEqual([["x", "FP32", [-1, 4]]]);
    expect(meta.outputs.map((o) => o.name)).toEqual(["y", "row_sum"]);
    const unknown = await refused(h.client.call("modelMetadata", { name: "nope" }));
    expect(unknown.code).toBe(status.NOT_FOUND);
    expect(unknown.details).toBe('unknown model "nope"');
    const version = await refused(h.client.call("modelReady", { name: "affine", version: "7" }));
    expect(version.code).toBe(status.NOT_FOUND);
    expect(version.details).toBe('model "affine" has no version "7"');
  });

  test("ModelConfig: Triton's fields, dims without the batch axis", async () => {
    const { config } = await h.client.call("modelConfig", { name: "affine" });
    expect(config?.name).toBe("affine");
    expect(config?.maxBatchSize).toBe(8);
    expect(config?.input.map((i) => [i.name, i.dataType, i.dims.map(Number)])).toEqual([
      ["x", DataType.TYPE_FP32, [4]],
    ]);
    expect(config?.output.map((o) => o.dataType)).toEqual([DataType.TYPE_FP32, DataType.TYPE_FP64]);
  });

  test("ModelStatistics counts what both transports ran", async () => {
    const before = (await h.client.call("modelStatistics", { name: "affine" })).modelStats[0];
    await h.client.call("modelInfer", {
      modelName: "affine",
      inputs: [{ name: "x", datatype: "FP32", shape: [1n, 4n] }],
      rawInputContents: [f32([1, 2, 3, 4])],
    });
    await postJson(`${h.url}/v2/models/affine/infer`, {
      inputs: [{ name: "x", shape: [2, 4], datatype: "FP32", data: [1, 2, 3, 4, 5, 6, 7, 8] }],
    });
    const after = (await h.client.call("modelStatistics", { name: "affine" })).modelStats[0];
    expect(Number(after?.inferenceCount) - Number(before?.inferenceCount)).toBe(3);
    expect(Number(after?.inferenceStats?.success?.count) - Number(before?.inferenceStats?.success?.count)).toBe(2);
    const all = await h.client.call("modelStatistics", {});
    expect(all.modelStats.map((s) => s.name)).toContain("sum");
  });

  test("RepositoryIndex, and load / unload behind the bearer token", async () => {
    const index = await h.client.call("repositoryIndex", {});
    expect(index.models.find((m) => m.name === "broken")).toMatchObject({ state: "UNAVAILABLE" });
    const ready = await h.client.call("repositoryIndex", { ready: true });
    expect(ready.models.every((m) => m.state === "READY")).toBe(true);
    const noToken = await refused(h.client.call("repositoryModelLoad", { modelName: "broken" }));
    expect(noToken.code).toBe(status.UNAUTHENTICATED);
    const auth = { metadata: { authorization: "Bearer s3cret" } };
    const broken = await refused(h.client.call("repositoryModelLoad", { modelName: "broken" }, auth));
    expect(broken.code).toBe(status.INTERNAL);
    expect(broken.details).toContain("executable_inputs is missing");
    await h.client.call("repositoryModelUnload", { modelName: "sum" }, auth);
    expect(h.registry.getModel("sum")).toBeUndefined();
    await h.client.call("repositoryModelLoad", { modelName: "sum" }, auth);
    expect(h.registry.getModel("sum")).toBeDefined();
    const override = await refused(
      h.client.call(
        "repositoryModelLoad",
        { modelName: "sum", parameters: { config: { parameterChoice: { case: "stringParam", value: "{}" } } } },
        auth,
      ),
    );
    expect(override.code).toBe(status.INVALID_ARGUMENT);
  });
});

describe("gRPC: ModelInfer", () => {
  test("raw and typed contents answer what REST answers, byte for byte", async () => {
    const x = [0.5, -1, 3.25, 1e-3, 7, 8, -9, 10];
    const raw = await h.client.call("modelInfer", {
      modelName: "affine",
      id: "r1",
      inputs: [{ name: "x", datatype: "FP32", shape: [2n, 4n] }],
      rawInputContents: [f32(x)],
    });
    const typed = await h.client.call("modelInfer", {
      modelName: "affine",
      inputs: [{ name: "x", datatype: "FP32", shape: [2n, 4n], contents: { fp32Contents: x } }],
    });
    const rest = (
      await postJson(`${h.url}/v2/models/affine/infer`, {
        inputs: [{ name: "x", shape: [2, 4], datatype: "FP32", data: x }],
      })
    ).body as Json;
    expect(raw.id).toBe("r1");
    expect(raw.modelName).toBe("affine");
    expect(raw.outputs.map((o) => [o.name, o.datatype, o.shape.map(Number)])).toEqual([
      ["y", "FP32", [2, 4]],
      ["row_sum", "FP64", [2]],
    ]);
    expect(typed.rawOutputContents).toEqual(raw.rawOutputContents);
    expect([...new Float32Array(own(raw.rawOutputContents[0] as Uint8Array).buffer)]).toEqual(rest.outputs[0].data);
    expect([...new Float64Array(own(raw.rawOutputContents[1] as Uint8Array).buffer)]).toEqual(rest.outputs[1].data);
  });

  test("requested outputs: only those, in the order asked", async () => {
    const r = await h.client.call("modelInfer", {
      modelName: "affine",
      inputs: [{ name: "x", datatype: "FP32", shape: [1n, 4n] }],
      outputs: [{ name: "row_sum" }],
      rawInputContents: [f32([1, 1, 1, 1])],
    });
    expect(r.outputs.map((o) => o.name)).toEqual(["row_sum"]);
    expect([...new Float64Array(own(r.rawOutputContents[0] as Uint8Array).buffer)]).toEqual([12]);
  });

  test("every datatype through raw contents, and typed contents where the protocol has a list", async () => {
    const lists: Record<string, string | null> = {
      BOOL: "boolContents",
      INT8: "intContents",
      INT16: "intContents",
      INT32: "intContents",
      INT64: "int64Contents",
      UINT8: "uintContents",
      UINT16: "uintContents",
      UINT32: "uintContents",
      UINT64: "uint64Contents",
      FP16: null,
      BF16: null,
      FP32: "fp32Contents",
      FP64: "fp64Contents",
    };
    const sizes: Record<string, number> = { BOOL: 1, INT8: 1, UINT8: 1, INT16: 2, UINT16: 2, FP16: 2, BF16: 2 };
    for (const [datatype, list] of Object.entries(lists)) {
      const model = `echo_${datatype.toLowerCase()}`;
      if (!h.registry.getModel(model)) continue;
      const size = sizes[datatype] ?? (datatype.endsWith("64") ? 8 : 4);
      const bytes = new Uint8Array(3 * size);
      for (let i = 0; i < bytes.length; i++) bytes[i] = datatype === "BOOL" ? i % 2 : (i * 37 + 11) & 0x7f;
      const r = await h.client.call("modelInfer", {
        modelName: model,
        inputs: [{ name: "in", datatype, shape: [1n, 3n] }],
        rawInputContents: [bytes],
      });
      expect(own(r.rawOutputContents[0] as Uint8Array)).toEqual(bytes);
      if (list === null) {
        const e = await refused(
          h.client.call("modelInfer", {
            modelName: model,
            inputs: [{ name: "in", datatype, shape: [1n, 3n], contents: { fp32Contents: [1, 2, 3] } }],
          }),
        );
        expect(e.code).toBe(status.INVALID_ARGUMENT);
        expect(e.details).toBe(
          `input "in": ${datatype} has no typed contents list; send its bytes in raw_input_contents`,
        );
        continue;
      }
      const values =
        datatype === "BOOL"
          ? [true, false, true]
          : datatype.endsWith("64") && datatype !== "FP64"
            ? [1n, 2n, 3n]
            : [1, 2, 3];
      const typed = await h.client.call("modelInfer", {
        modelName: model,
        inputs: [{ name: "in", datatype, shape: [1n, 3n], contents: { [list]: values } }],
      });
      expect(typed.outputs[0]?.datatype).toBe(datatype);
      expect(typed.rawOutputContents[0]?.byteLength).toBe(3 * size);
    }
  });

  test("model errors map to gRPC statuses with the model's message", async () => {
    const expected: Record<string, status> = {
      INVALID_ARGUMENT: status.INVALID_ARGUMENT,
      NOT_FOUND: status.NOT_FOUND,
      UNAVAILABLE: status.UNAVAILABLE,
      SHUTTING_DOWN: status.UNAVAILABLE,
      QUEUE_FULL: status.RESOURCE_EXHAUSTED,
      UNAUTHORIZED: status.UNAUTHENTICATED,
      OUT_OF_MEMORY: status.RESOURCE_EXHAUSTED,
      EXECUTE_FAILED: status.INTERNAL,
    };
    for (let code = 0; code < FAULT_CODES.length; code++) {
      const name = FAULT_CODES[code] as string;
      const e = await refused(
        h.client.call("modelInfer", {
          modelName: "faulty",
          inputs: [{ name: "code", datatype: "INT32", shape: [1n], contents: { intContents: [code] } }],
        }),
      );
      expect([name, e.code]).toEqual([name, expected[name] as status]);
      expect(e.details).toBe(`faulty model raised ${name}`);
    }
    const cold = await refused(
      h.client.call("modelInfer", {
        modelName: "cold",
        inputs: [{ name: "x", datatype: "FP32", shape: [1n, 4n] }],
        rawInputContents: [f32([1, 2, 3, 4])],
      }),
    );
    expect(cold.code).toBe(status.UNAVAILABLE);
    expect(cold.details).toBe('model "cold" is not ready');
  });

  test("bytes that are not a ModelInferRequest are INVALID_ARGUMENT, and the server serves on", async () => {
    const raw = rawInferClient(h.address);
    const answer = await raw.modelInfer(Uint8Array.from([0x0a, 0xff, 0xff, 0xff]));
    const e = answer.error;
    raw.close();
    expect(e?.code).toBe(status.INVALID_ARGUMENT);
    expect(e?.details).toContain("is not a valid inference.ModelInferRequest message");
    expect((await h.client.call("serverLive", {})).live).toBe(true);
  });

  test("the request metrics count gRPC requests under protocol=grpc with the status name", async () => {
    await refused(h.client.call("modelInfer", { modelName: "affine", inputs: [] }));
    const text = await (await fetch(`${h.url}/metrics`)).text();
    expect(text).toMatch(/worker_requests_total\{model="affine",status="OK",protocol="grpc"\} \d+/);
    expect(text).toMatch(/worker_requests_total\{model="affine",status="INVALID_ARGUMENT",protocol="grpc"\} 1/);
    expect(text).toMatch(/worker_request_latency_seconds_count\{model="affine",protocol="grpc"\} \d+/);
  });

  test("a message over the cap is RESOURCE_EXHAUSTED", async () => {
    const small = await startGrpcHarness({ maxMessageBytes: 4096 });
    try {
      const e = await refused(
        small.client.call("modelInfer", {
          modelName: "affine",
          inputs: [{ name: "x", datatype: "FP32", shape: [8n, 4n] }],
          rawInputContents: [new Uint8Array(8192)],
        }),
      );
      expect(e.code).toBe(status.RESOURCE_EXHAUSTED);
    } finally {
      await small.stop();
    }
  });
});

describe("gRPC: ModelStreamInfer", () => {
  test("answers in request order; a bad request is an error_message and the stream goes on", async () => {
    const stream = h.client.stream();
    const answers: Json[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (m) => answers.push(m));
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    const request = (id: string, x: number[], model = "affine") =>
      create(ModelInferRequestSchema, {
        modelName: model,
        id,
        inputs: [{ name: "x", datatype: "FP32", shape: [1n, BigInt(x.length)] }],
        rawInputContents: [f32(x)],
      });
    stream.write(request("a", [1, 2, 3, 4]));
    stream.write(request("b", [1, 2, 3]));
    stream.write(request("c", [0, 0, 0, 0]));
    stream.write(request("d", [0, 0, 0, 0], "nope"));
    stream.end();
    await done;
    expect(answers).toHaveLength(4);
    expect(answers[0].inferResponse.id).toBe("a");
    expect(answers[0].errorMessage).toBe("");
    expect(answers[1].errorMessage).toBe('input "x": shape [1, 3] axis 1 is 3 but the model expects 4 ([-1, 4])');
    expect(answers[2].inferResponse.id).toBe("c");
    expect([...new Float32Array(own(answers[2].inferResponse.rawOutputContents[0]).buffer)]).toEqual([1, 1, 1, 1]);
    expect(answers[3].errorMessage).toBe('unknown model "nope"');
  });
});

test("request bytes encode with the generated schema (sanity of the codegen)", () => {
  const bytes = toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, { modelName: "m", id: "x" }));
  expect([...bytes]).toEqual([0x0a, 0x01, 0x6d, 0x1a, 0x01, 0x78]);
});

test("the gRPC stack runs on the Bun version package.json pins (grpc-js over Bun's node:http2)", async () => {
  const pkg = await Bun.file(`${import.meta.dir}/../../../package.json`).json();
  expect(Bun.version).toBe(pkg.devDependencies.bun);
});

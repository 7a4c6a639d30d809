/**
 * Malformed ModelInfer requests on the real worker: each gets its status code and a message
 * naming the problem, and the worker answers a good request right after each.
 */
import { describe, expect, test } from "bun:test";
import { status } from "@grpc/grpc-js";
import type { HostTensor } from "@xlaserve/core";
import { rawInferClient } from "../../packages/server/src/grpc/raw-client.ts";
import { type InferInit, bytesOf, refused } from "./grpc-support.ts";
import { inputs, mlpRequest, useGrpcWorker } from "./grpc-worker.ts";

const w = useGrpcWorker();

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
      const e = await refused(w.client.call("modelInfer", request));
      expect([what, status[e.code], e.details]).toEqual([what, status[code], message]);
      // The worker serves on after each.
      const ok = await w.client.call("modelInfer", mlpRequest());
      expect(ok.outputs.length).toBe(2);
    }
  });

  test("bytes that are no ModelInferRequest are INVALID_ARGUMENT", async () => {
    const rawClient = rawInferClient(w.worker.grpcAddress as string);
    const garbage = (await rawClient.modelInfer(Uint8Array.from([0x2a, 0x05, 0x0a]))).error;
    expect(garbage?.code).toBe(status.INVALID_ARGUMENT);
    expect(garbage?.details).toStartWith("the request is not a valid inference.ModelInferRequest message: ");
    rawClient.close();
    expect((await w.client.call("serverLive", {})).live).toBe(true);
  });
});

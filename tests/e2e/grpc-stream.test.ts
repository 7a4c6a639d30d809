/**
 * ModelStreamInfer on the real worker: requests for every example model on one stream, answered
 * in order and byte-equal to REST, a bad request in the middle answered by its error_message;
 * an open stream counted in worker_inflight_requests until it ends.
 */
import { describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import type { HostTensor } from "@xlaserve/core";
import { ModelInferRequestSchema } from "../../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { inferRequest, restBytes } from "./grpc-support.ts";
import { MODELS, inputs, useGrpcWorker } from "./grpc-worker.ts";

const w = useGrpcWorker();

describe("ModelStreamInfer", () => {
  test("every example model on one stream, answers in order, a bad request in the middle", async () => {
    const stream = w.client.stream();
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
      const rest = await restBytes(w.worker.url, model, x);
      const first = rest.get((MODELS[model] as (typeof MODELS)[string]).outputs[0] as string) as Uint8Array;
      expect(Buffer.from(ok[i]?.inferResponse?.rawOutputContents[0] as Uint8Array).equals(Buffer.from(first))).toBe(
        true,
      );
    }
  }, 60_000);

  test("an open stream is a request in flight (worker_inflight_requests) until it ends", async () => {
    const inflight = async () => {
      const text = await (await fetch(`${w.worker.url}/metrics`)).text();
      return Number(/^worker_inflight_requests (\d+)/m.exec(text)?.[1]);
    };
    expect(await inflight()).toBe(0);
    const stream = w.client.stream();
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", () => {});
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    stream.write(create(ModelInferRequestSchema, inferRequest("mlp", inputs("mlp", 1, 3), false)));
    for (let i = 0; i < 100 && (await inflight()) === 0; i++) await Bun.sleep(10);
    expect(await inflight()).toBe(1);
    stream.end();
    await ended;
    expect(await inflight()).toBe(0);
  });
});

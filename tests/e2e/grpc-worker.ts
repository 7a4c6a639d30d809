/**
 * The worker the gRPC end-to-end tests talk to: the CPU engine on the example bundles (bearer
 * token "tok" for the repository calls), a grpc-js client to it, and the example models' inputs.
 * `useGrpcWorker()` starts one for the calling test file and stops it after.
 */
import { afterAll, beforeAll } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import { ShmObject } from "../../packages/server/test/support/shm-object.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type InferInit, exampleInput, inferRequest } from "./grpc-support.ts";
import { type TempRepo, collectLogs, makeRepo } from "./helpers.ts";

export const MODELS: Record<string, { input: string; dtype: "f32" | "i32"; item: number[]; outputs: string[] }> = {
  mlp: { input: "features", dtype: "f32", item: [64], outputs: ["probabilities", "logits"] },
  cnn: { input: "image", dtype: "f32", item: [32, 32, 3], outputs: ["logits"] },
  transformer: { input: "tokens", dtype: "i32", item: [16], outputs: ["logits"] },
};

/** A deterministic batch of `model`'s input. */
export function inputs(model: string, batch: number, seed: number): Map<string, HostTensor> {
  const m = MODELS[model] as (typeof MODELS)[string];
  return new Map([[m.input, exampleInput(m.dtype, [batch, ...m.item], seed)]]);
}

/** One MLP item, raw contents: the request that shows the worker still serves. */
export const mlpRequest = (): InferInit => inferRequest("mlp", inputs("mlp", 1, 7), false);

export interface GrpcWorker {
  readonly worker: StartedWorker;
  readonly client: InferenceClient;
  /** A POSIX shared-memory object removed when the file's tests end. */
  shm(byteSize: number): ShmObject;
}

export interface GrpcWorkerOptions {
  /** The example bundles to serve (default: all three). */
  readonly models?: readonly string[];
  /** Settings merged over the defaults (bearer token "tok", no repository polling). */
  readonly config?: Parameters<typeof startCpuWorker>[2];
}

export function useGrpcWorker(options: GrpcWorkerOptions = {}): GrpcWorker {
  let repo: TempRepo | undefined;
  let worker: StartedWorker | undefined;
  let client: InferenceClient | undefined;
  const objects: ShmObject[] = [];
  beforeAll(async () => {
    repo = makeRepo(options.models);
    worker = await startCpuWorker(repo, collectLogs().logger, {
      server: { authToken: "tok" },
      repository: { dynamic: false },
      ...options.config,
    });
    client = new InferenceClient(worker.grpcAddress as string);
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await worker?.stop();
    repo?.cleanup();
    for (const o of objects) o.remove();
  });
  return {
    get worker() {
      if (!worker) throw new Error("the gRPC test worker has not started");
      return worker;
    },
    get client() {
      if (!client) throw new Error("the gRPC test worker has not started");
      return client;
    },
    shm(byteSize) {
      const o = new ShmObject(byteSize);
      objects.push(o);
      return o;
    },
  };
}

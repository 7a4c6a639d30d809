/**
 * grpc-timeout on the real worker: a request whose deadline passes while it waits behind others
 * is answered DEADLINE_EXCEEDED and dropped before it runs (the model never executes it).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { status } from "@grpc/grpc-js";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { exampleInput, inferRequest, refused } from "./grpc-support.ts";
import { type TempRepo, collectLogs, makeRepo } from "./helpers.ts";

let repo: TempRepo;
let worker: StartedWorker;
let client: InferenceClient;

beforeAll(async () => {
  repo = makeRepo(["cnn"]);
  // One run at a time, so the requests below queue behind each other.
  worker = await startCpuWorker(repo, collectLogs().logger, {
    repository: { dynamic: false },
    concurrency: { perModel: 1, queueDepth: 256 },
  });
  client = new InferenceClient(worker.grpcAddress as string);
}, 120_000);

afterAll(async () => {
  client?.close();
  await worker?.stop();
  repo?.cleanup();
});

test("a request past its deadline is DEADLINE_EXCEEDED and never runs; the worker serves on", async () => {
  const request = inferRequest("cnn", new Map([["image", exampleInput("f32", [4, 32, 32, 3], 1)]]), false);
  const model = worker.registry.getModel("cnn");
  const executions = () => model?.stats().executionCount ?? 0;
  // How long one warm run takes here, to queue well past the deadline whatever the machine's load.
  const times: number[] = [];
  for (let i = 0; i < 4; i++) {
    const t = performance.now();
    await client.call("modelInfer", request);
    times.push(performance.now() - t);
  }
  const runMs = Math.max(0.5, Math.min(...times));
  const deadlineMs = 100;
  const ahead = Math.min(400, Math.ceil((deadlineMs * 4) / runMs) + 8);
  const before = executions();
  const t0 = performance.now();
  const queued = Array.from({ length: ahead }, () => client.call("modelInfer", request));
  const late = refused(client.call("modelInfer", request, { timeoutSeconds: deadlineMs / 1000 }));
  const e = await late;
  expect(e.code).toBe(status.DEADLINE_EXCEEDED);
  await Promise.all(queued);
  const elapsed = performance.now() - t0;
  // The queue really outlasted the deadline, and the late request was never executed.
  expect(elapsed).toBeGreaterThan(deadlineMs);
  expect(executions() - before).toBe(ahead);
  expect((await client.call("modelInfer", request)).outputs.length).toBe(1);
}, 120_000);

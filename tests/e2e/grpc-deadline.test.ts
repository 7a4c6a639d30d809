/**
 * grpc-timeout on the real worker: a request whose deadline passes while it waits behind others
 * is answered DEADLINE_EXCEEDED and dropped before it runs (the model never executes it).
 */
import { expect, test } from "bun:test";
import { status } from "@grpc/grpc-js";
import { exampleInput, inferRequest } from "./grpc-support.ts";
import { useGrpcWorker } from "./grpc-worker.ts";

// One run at a time, so the requests below queue behind each other.
const w = useGrpcWorker({ models: ["cnn"], config: { concurrency: { perModel: 1, queueDepth: 4096 } } });
// The longest queue the retries below build stays under that bound, so it never sheds.
const maxAhead = 3200;

test("a request past its deadline is DEADLINE_EXCEEDED and never runs; the worker serves on", async () => {
  const request = inferRequest("cnn", new Map([["image", exampleInput("f32", [4, 32, 32, 3], 1)]]), false);
  const model = w.worker.registry.getModel("cnn");
  const executions = () => model?.stats().executionCount ?? 0;
  // How long one warm run takes here, to queue well past the deadline whatever the machine's load.
  const times: number[] = [];
  for (let i = 0; i < 4; i++) {
    const t = performance.now();
    await w.client.call("modelInfer", request);
    times.push(performance.now() - t);
  }
  const runMs = Math.max(0.5, Math.min(...times));
  const deadlineMs = 100;
  const base = Math.min(400, Math.ceil((deadlineMs * 4) / runMs) + 8);
  // A queue too short for the deadline on a fast moment of the machine is tried again, longer.
  let outcome: { code: number; ahead: number; ran: number; elapsed: number } | null = null;
  for (let attempt = 0, ahead = base; attempt < 4; attempt++, ahead = Math.min(maxAhead, ahead * 2)) {
    const before = executions();
    const t0 = performance.now();
    const queued = Array.from({ length: ahead }, () => w.client.call("modelInfer", request));
    const late = w.client.call("modelInfer", request, { timeoutSeconds: deadlineMs / 1000 }).then(
      () => status.OK,
      (e) => e.code as number,
    );
    const code = await late;
    await Promise.all(queued);
    const elapsed = performance.now() - t0;
    // The late request, when refused, was never executed: only the ones ahead of it ran.
    await Bun.sleep(50);
    outcome = { code, ahead, ran: executions() - before, elapsed };
    // The client's own deadline can also fire while the request is already running (the queue
    // drained just in time): that attempt proves nothing either way, so it is tried again, longer.
    if (code !== status.OK && outcome.ran === ahead) break;
  }
  expect(outcome?.code).toBe(status.DEADLINE_EXCEEDED);
  expect(outcome?.ran).toBe(outcome?.ahead);
  expect(outcome?.elapsed).toBeGreaterThan(deadlineMs);
  expect((await w.client.call("modelInfer", request)).outputs.length).toBe(1);
}, 120_000);

/**
 * gRPC ModelInfer on the MLP example against REST on the same worker and against a bare grpc-js
 * server answering a same-size message, in one run; then a large input (64 MiB of FP32) sent
 * inline in the message against the same tensor through system shared memory, end to end.
 *
 *   bun bench/grpc.bench.ts [--duration 5] [--concurrency 16] [--rounds 5] [--warm-up 3]
 *                           [--large-mb 64] [--large-runs 5] [--large-program last|sum]
 *                           [--engine auto|reactant|pjrt] [--dynamic-batching] [--results-dir DIR]
 *
 * --dynamic-batching turns on the worker's coalescing of queued requests (concurrency.dynamicBatching)
 * for both protocols: on PJRT the MLP's device round trip (about 0.3 ms for upload, run and download)
 * bounds one-row executions far below either protocol's cost, so without it the ratio to the bare
 * server measures the device, not the protocol.
 * Throughput (grpc/throughput.ts, load from grpc/load.ts in its own process): gRPC sends
 * pre-encoded ModelInferRequest bytes with raw contents, REST the binary tensor data extension
 * (the same bytes in and out). The bare server is grpc-js with the same service definition and
 * encoder, answering a precomputed copy of the worker's MLP answer without decoding the request
 * or running anything; the bare own-transport server does the same on the worker's gRPC
 * transport (node:http2, packages/server/src/grpc/transport), the floor of that transport.
 * Large input: grpc/large-input.ts, on tests/e2e/row-reduce-bundle.ts's model.
 * Writes bench/results/grpc-<date>.json (bench/lib/results.ts).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { startWorker } from "../apps/worker/src/index.ts";
import { InferenceClient } from "../packages/server/src/grpc/client.ts";
import { serviceDefinition } from "../packages/server/src/grpc/definition.ts";
import {
  GRPCInferenceService,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
} from "../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { H2GrpcServer } from "../packages/server/src/grpc/transport/h2-server.ts";
import { writeRowReduceBundle } from "../tests/e2e/row-reduce-bundle.ts";
import { measureLargeInput } from "./grpc/large-input.ts";
import type { LoadSpec } from "./grpc/load.ts";
import { type Side, measureThroughput } from "./grpc/throughput.ts";
import { BenchResult, resultsDir } from "./lib/results.ts";

const { values: args } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    "warm-up": { type: "string", default: "3" },
    "large-mb": { type: "string", default: "64" },
    "large-runs": { type: "string", default: "5" },
    "large-program": { type: "string", default: "last" },
    engine: { type: "string" },
    "dynamic-batching": { type: "boolean", default: false },
    "results-dir": { type: "string" },
  },
});

const result = new BenchResult("grpc", ["bun", "bench/grpc.bench.ts", ...process.argv.slice(2)]);
result.dir = resultsDir(args["results-dir"]);
const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
const duration = Number(args.duration);
const concurrency = Number(args.concurrency);
const rounds = Number(args.rounds);
const largeElements = Math.floor((Number(args["large-mb"]) * 1024 * 1024) / 4);
const largeProgram = args["large-program"] === "sum" ? "sum" : "last";

const root = mkdtempSync(join(tmpdir(), "xlaserve-grpc-bench-"));
const repository = join(root, "models");
cpSync(resolve(import.meta.dir, "../examples/models/mlp"), join(repository, "mlp"), {
  recursive: true,
  filter: (src) => !src.includes("/.cache") && !src.endsWith("reference.safetensors"),
});
const sumDir = join(repository, "sum_large");
mkdirSync(sumDir, { recursive: true });
writeRowReduceBundle(sumDir, {
  name: "sum_large",
  description: "sums a large FP32 input (benchmark of large inputs)",
  n: largeElements,
  batchSizes: [1],
  program: largeProgram,
});

const worker = await startWorker({
  env: {},
  repository,
  port: 0,
  config: {
    ...(args.engine ? { engine: args.engine as "auto" } : {}),
    cache: { stateDir: join(root, "state") },
    repository: { dynamic: false },
    ...(args["dynamic-batching"] ? { concurrency: { dynamicBatching: true } } : {}),
    log: { level: "warn" },
  },
});
const grpcAddress = worker.grpcAddress as string;
const client = new InferenceClient(grpcAddress);
const bare = new Server({ "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 });
let bareH2: H2GrpcServer | undefined;

try {
  result.figure("engine", worker.engine.engine);
  result.figure("dynamicBatching", args["dynamic-batching"] === true);
  result.figure("loadAverageAtStart", loadAtStart);
  // The MLP request: one item, raw contents; and the same bytes for REST's binary extension.
  const features = new Float32Array(64).map((_, i) => Math.sin(i));
  const featureBytes = new Uint8Array(features.buffer);
  const request = create(ModelInferRequestSchema, {
    modelName: "mlp",
    inputs: [{ name: "features", datatype: "FP32", shape: [1n, 64n] }],
    rawInputContents: [featureBytes],
  });
  const requestBytes = toBinary(ModelInferRequestSchema, request);
  const answer = await client.call("modelInfer", request);
  const answerBytes = toBinary(ModelInferResponseSchema, answer);
  const restHeader = new TextEncoder().encode(
    JSON.stringify({
      inputs: [{ name: "features", datatype: "FP32", shape: [1, 64], parameters: { binary_data_size: 256 } }],
      parameters: { binary_data_output: true },
    }),
  );
  const restBody = new Uint8Array(restHeader.byteLength + 256);
  restBody.set(restHeader, 0);
  restBody.set(featureBytes, restHeader.byteLength);

  // The bare server: same definition and encoder, a precomputed answer of the same size.
  const precomputed = fromBinary(ModelInferResponseSchema, answerBytes);
  bare.addService(serviceDefinition(GRPCInferenceService), {
    ModelInfer: (_call: unknown, callback: (e: null, r: unknown) => void) => callback(null, precomputed),
  });
  const barePort = await new Promise<number>((ok, fail) =>
    bare.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))),
  );
  const modelInfer = serviceDefinition(GRPCInferenceService).ModelInfer as { path: string };
  bareH2 = new H2GrpcServer(
    new Map([
      [
        modelInfer.path,
        {
          kind: "unary",
          handler: (_call, callback) => callback(null, precomputed),
          serialize: (v) => toBinary(ModelInferResponseSchema, v as typeof precomputed),
        },
      ],
    ]),
    { maxMessageBytes: 1 << 30 },
  );
  const bareH2Port = await bareH2.listen("127.0.0.1", 0);
  result.figure("request", { grpcBytes: requestBytes.byteLength, restBytes: restBody.byteLength, shape: [1, 64] });
  result.figure("response", { grpcBytes: answerBytes.byteLength });
  const warmUpSeconds = Number(args["warm-up"]);
  result.figure("load", {
    concurrency,
    seconds: duration,
    rounds,
    warmUpSeconds,
    generator: "Bun subprocess (grpc-js / fetch)",
  });

  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
  const specs: Record<Side, LoadSpec> = {
    bare: { kind: "grpc", target: `127.0.0.1:${barePort}`, body: b64(requestBytes), concurrency, seconds: duration },
    bareH2: {
      kind: "grpc",
      target: `127.0.0.1:${bareH2Port}`,
      body: b64(requestBytes),
      concurrency,
      seconds: duration,
    },
    grpc: { kind: "grpc", target: grpcAddress, body: b64(requestBytes), concurrency, seconds: duration },
    rest: {
      kind: "rest",
      target: `${worker.url}/v2/models/mlp/infer`,
      body: b64(restBody),
      headerLength: restHeader.byteLength,
      concurrency,
      seconds: duration,
    },
  };
  await measureThroughput(result, { specs, rounds, warmUpSeconds });
  // Whether the MLP ran on the serving thread (inline) or on the engine thread: a run there costs
  // two cross-thread messages per request, which moves every ratio above.
  const meta = (await (await fetch(`${worker.url}/v2/models/mlp`)).json()) as { xlaserve?: { inline?: unknown } };
  result.figure("mlpInline", meta.xlaserve?.inline ?? null);
  await result.step("large input inline vs shared memory", () =>
    measureLargeInput(result, {
      client,
      model: "sum_large",
      elements: largeElements,
      runs: Number(args["large-runs"]),
      program: largeProgram,
    }),
  );
} finally {
  client.close();
  bare.forceShutdown();
  await bareH2?.stop(true, 0);
  await worker.stop();
  rmSync(root, { recursive: true, force: true });
}
console.log(`results: ${result.write()}`);

/**
 * gRPC ModelInfer on the MLP example against REST on the same worker and against a bare grpc-js
 * server answering a same-size message, in one run; then a large input (64 MiB of FP32) sent
 * inline in the message against the same tensor through system shared memory, end to end.
 *
 *   bun bench/grpc.bench.ts [--duration 5] [--concurrency 16] [--rounds 3] [--large-mb 64]
 *                           [--large-runs 5] [--large-program last|sum] [--engine auto|reactant|pjrt]
 *                           [--results-dir DIR]
 *
 * Throughput: the load runs in its own Bun process (this file with --generate): `concurrency`
 * calls in flight over one HTTP/2 channel for gRPC (pre-encoded ModelInferRequest bytes, raw
 * contents), keep-alive fetch loops for REST (the binary tensor data extension, the same bytes
 * in and out). Targets take turns, `rounds` times; each side's best round is kept. The bare
 * server is grpc-js with the same service definition and encoder, answering a precomputed copy
 * of the worker's MLP answer without decoding the request or running anything.
 * Large input: a bundle written here whose program takes a [1, N] FP32 input (N = large-mb MiB / 4)
 * and answers its last element (--large-program last, so the figure is the transport's, not the
 * engine's) or its sum (sum: a full read, the same compute on both sides); inline = the client builds the ModelInferRequest with the bytes in raw_input_contents and
 * sends it; shared memory = the client writes the bytes into a registered POSIX shared-memory
 * region and sends a request naming it. Both timed from the data in the client's memory to the
 * answer, alternating, median of large-runs; both answers are checked equal.
 * Writes bench/results/grpc-<date>.json (bench/lib/results.ts).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServiceError,
  credentials,
  makeGenericClientConstructor,
} from "@grpc/grpc-js";
import { startWorker } from "../apps/worker/src/index.ts";
import { InferenceClient } from "../packages/server/src/grpc/client.ts";
import { serviceDefinition } from "../packages/server/src/grpc/definition.ts";
import {
  GRPCInferenceService,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
} from "../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { BenchResult, resultsDir } from "./lib/results.ts";
import { median, percentile } from "./lib/stats.ts";

interface LoadSpec {
  readonly kind: "grpc" | "rest";
  /** gRPC host:port, or the REST infer URL. */
  readonly target: string;
  /** Base64 of the ModelInferRequest bytes, or of the REST body. */
  readonly body: string;
  readonly headerLength?: number;
  readonly concurrency: number;
  readonly seconds: number;
}

interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the serving process per answered request (filled in by the parent). */
  serverCpuUsPerRequest?: number;
}

const { values: args } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "3" },
    "large-mb": { type: "string", default: "64" },
    "large-runs": { type: "string", default: "5" },
    "large-program": { type: "string", default: "last" },
    engine: { type: "string" },
    "results-dir": { type: "string" },
    generate: { type: "string" },
  },
});

/** Raw-bytes ModelInfer: the generator sends pre-encoded requests and does not decode answers. */
function rawInferClient(address: string) {
  const Raw = makeGenericClientConstructor(
    {
      ModelInfer: {
        path: "/inference.GRPCInferenceService/ModelInfer",
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    "Raw",
  );
  return new Raw(address, credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
  }) as unknown as {
    ModelInfer(b: Buffer, m: Metadata, cb: (e: ServiceError | null, r?: Buffer) => void): void;
    close(): void;
  };
}

async function generate(spec: LoadSpec): Promise<LoadResult> {
  const body = Buffer.from(spec.body, "base64");
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + spec.seconds * 1000;
  let one: () => Promise<boolean>;
  let close = () => {};
  if (spec.kind === "grpc") {
    const client = rawInferClient(spec.target);
    const metadata = new Metadata();
    one = () => new Promise((done) => client.ModelInfer(body, metadata, (e) => done(e === null)));
    close = () => client.close();
  } else {
    const headers = {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(spec.headerLength),
    };
    one = async () => {
      const r = await fetch(spec.target, { method: "POST", headers, body });
      await r.arrayBuffer();
      return r.status === 200;
    };
  }
  // Warm-up: connections open, code paths compiled.
  for (let i = 0; i < 50; i++) await one();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const ok = await one();
        latencies.push(performance.now() - t);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  close();
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: Math.round(latencies.length / seconds),
    p50Ms: Math.round(percentile(latencies, 50) * 1000) / 1000,
    p99Ms: Math.round(percentile(latencies, 99) * 1000) / 1000,
  };
}

if (args.generate) {
  console.log(JSON.stringify(await generate(JSON.parse(args.generate) as LoadSpec)));
  process.exit(0);
}

async function load(spec: LoadSpec): Promise<LoadResult> {
  const cpu0 = process.cpuUsage();
  const proc = Bun.spawn([process.execPath, import.meta.path, "--generate", JSON.stringify(spec)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`the load generator failed: ${out}`);
  const result = JSON.parse(out.trim().split("\n").at(-1) as string) as LoadResult;
  const cpu = process.cpuUsage(cpu0);
  // Includes the generator's warm-up requests (50).
  result.serverCpuUsPerRequest = Math.round(((cpu.user + cpu.system) / (result.requests + 50)) * 10) / 10;
  return result;
}

/** A bundle of one large FP32 input [1, n] and a one-element answer (its last element or its sum, times a weight). */
function writeSumBundle(dir: string, n: number, program: "sum" | "last"): void {
  writeFileSync(
    join(dir, "manifest.yaml"),
    `format_version: "2.0"
name: "sum_large"
description: "sums a large FP32 input (benchmark of large inputs)"
executable_inputs:
  - name: "x"
    dtype: "f32"
    shape: "cn"
    dims:
      c: ${n}
executable_outputs:
  - name: "sum"
    dtype: "f32"
    shape: "cn"
    dims:
      c: 1
batching:
  compiled_batch_sizes:
    - 1
`,
  );
  writeFileSync(
    join(dir, "model.b1.mlir"),
    program === "sum"
      ? `module @sum_large {
  func.func public @main(%arg0: tensor<1x${n}xf32>, %arg1: tensor<1xf32>) -> (tensor<1x1xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<1x${n}xf32>, tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<1xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<1xf32>) -> tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}
`
      : `module @sum_large {
  func.func public @main(%arg0: tensor<1x${n}xf32>, %arg1: tensor<1xf32>) -> (tensor<1x1xf32>) {
    %0 = stablehlo.slice %arg0 [0:1, ${n - 1}:${n}] : (tensor<1x${n}xf32>) -> tensor<1x1xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}
`,
  );
  const header = JSON.stringify({
    __metadata__: { argument_order: JSON.stringify(["scale"]), format: "pt" },
    scale: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
  });
  const headerBytes = new TextEncoder().encode(header.padEnd(Math.ceil(header.length / 8) * 8, " "));
  const file = new Uint8Array(8 + headerBytes.byteLength + 4);
  new DataView(file.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  file.set(headerBytes, 8);
  new DataView(file.buffer).setFloat32(8 + headerBytes.byteLength, 1, true);
  writeFileSync(join(dir, "weights.safetensors"), file);
}

const result = new BenchResult("grpc", ["bun", "bench/grpc.bench.ts", ...process.argv.slice(2)]);
result.dir = resultsDir(args["results-dir"]);
const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
const duration = Number(args.duration);
const concurrency = Number(args.concurrency);
const rounds = Number(args.rounds);
const largeElements = Math.floor((Number(args["large-mb"]) * 1024 * 1024) / 4);

const root = mkdtempSync(join(tmpdir(), "xlaserve-grpc-bench-"));
const repository = join(root, "models");
cpSync(resolve(import.meta.dir, "../examples/models/mlp"), join(repository, "mlp"), {
  recursive: true,
  filter: (src) => !src.includes("/.cache") && !src.endsWith("reference.safetensors"),
});
const sumDir = join(repository, "sum_large");
mkdirSync(sumDir, { recursive: true });
writeSumBundle(sumDir, largeElements, args["large-program"] === "sum" ? "sum" : "last");

const worker = await startWorker({
  env: {},
  repository,
  port: 0,
  config: {
    ...(args.engine ? { engine: args.engine as "auto" } : {}),
    cache: { stateDir: join(root, "state") },
    repository: { dynamic: false },
    log: { level: "warn" },
  },
});
const grpcAddress = worker.grpcAddress as string;
const client = new InferenceClient(grpcAddress);
const bare = new Server({ "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 });

try {
  result.figure("engine", worker.engine.engine);
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
  result.figure("request", { grpcBytes: requestBytes.byteLength, restBytes: restBody.byteLength, shape: [1, 64] });
  result.figure("response", { grpcBytes: answerBytes.byteLength });
  result.figure("load", { concurrency, seconds: duration, rounds, generator: "Bun subprocess (grpc-js / fetch)" });

  const specs: Record<string, LoadSpec> = {
    bare: { kind: "grpc", target: `127.0.0.1:${barePort}`, body: b64(requestBytes), concurrency, seconds: duration },
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
  // Past the worker's inline-run threshold (INLINE_AFTER_REQUESTS) before anything is timed, so
  // that every side sees the model in the same state.
  for (let i = 0; i < 400; i++) await client.call("modelInfer", request);
  const best: Record<string, LoadResult> = {};
  const all: Record<string, LoadResult[]> = { bare: [], grpc: [], rest: [] };
  const order = ["bare", "grpc", "rest"];
  for (let r = 0; r < rounds; r++) {
    // Each round starts with the next side, so no side always runs first or last.
    for (const name of [...order.slice(r % 3), ...order.slice(0, r % 3)]) {
      const run = await result.step(`load ${name} round ${r}`, () => load(specs[name] as LoadSpec));
      if (!run) continue;
      (all[name] as LoadResult[]).push(run);
      if (!best[name] || run.rps > (best[name] as LoadResult).rps) best[name] = run;
      console.log(`  ${name.padEnd(5)} round ${r}: ${run.rps} req/s  p50 ${run.p50Ms} ms  p99 ${run.p99Ms} ms`);
    }
  }
  result.figure("rounds", all);
  result.figure("best", best);
  const { bare: b, grpc: g, rest } = best;
  if (b && g) {
    result.ratio(
      "grpc_vs_bare_requests_per_second",
      { label: "xlaserve gRPC ModelInfer (MLP) req/s", value: g.rps },
      { label: "bare grpc-js, same-size answer, req/s", value: b.rps },
      ">= 0.8",
    );
    result.ratio(
      "grpc_vs_bare_server_cpu_per_request",
      { label: "bare grpc-js server CPU us/request", value: b.serverCpuUsPerRequest ?? null },
      { label: "xlaserve gRPC server CPU us/request", value: g.serverCpuUsPerRequest ?? null },
    );
    result.ratio(
      "grpc_vs_bare_p50",
      { label: "bare p50 ms", value: b.p50Ms },
      { label: "xlaserve gRPC p50 ms", value: g.p50Ms },
    );
  }
  if (g && rest) {
    result.ratio(
      "grpc_vs_rest_requests_per_second",
      { label: "xlaserve gRPC req/s", value: g.rps },
      { label: "xlaserve REST (binary tensors) req/s, same worker", value: rest.rps },
    );
    result.ratio(
      "grpc_vs_rest_p99",
      { label: "REST p99 ms", value: rest.p99Ms },
      { label: "gRPC p99 ms", value: g.p99Ms },
    );
  }

  await result.step("large input inline vs shared memory", async () => {
    const n = largeElements;
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = ((i * 7919) % 1000) / 1000;
    const bytes = new Uint8Array(data.buffer);
    const name = `xlaserve-bench-${process.pid}`;
    const path = `/dev/shm/${name}`;
    writeFileSync(path, new Uint8Array(bytes.byteLength));
    try {
      const region = Bun.mmap(path, { shared: true });
      await client.call("systemSharedMemoryRegister", {
        name: "bench",
        key: `/${name}`,
        offset: 0n,
        byteSize: BigInt(bytes.byteLength),
      });
      const shape = [1n, BigInt(n)];
      const inline = async () => {
        const t = performance.now();
        const r = await client.call("modelInfer", {
          modelName: "sum_large",
          inputs: [{ name: "x", datatype: "FP32", shape }],
          rawInputContents: [bytes],
        });
        return { ms: performance.now() - t, out: Buffer.from(r.rawOutputContents[0] as Uint8Array).toString("hex") };
      };
      const shared = async (copy = true) => {
        const t = performance.now();
        if (copy) region.set(bytes);
        const r = await client.call("modelInfer", {
          modelName: "sum_large",
          inputs: [
            {
              name: "x",
              datatype: "FP32",
              shape,
              parameters: {
                shared_memory_region: { parameterChoice: { case: "stringParam", value: "bench" } },
                shared_memory_byte_size: { parameterChoice: { case: "int64Param", value: BigInt(bytes.byteLength) } },
              },
            },
          ],
        });
        return { ms: performance.now() - t, out: Buffer.from(r.rawOutputContents[0] as Uint8Array).toString("hex") };
      };
      await inline();
      await shared();
      const inlineMs: number[] = [];
      const sharedMs: number[] = [];
      const inPlaceMs: number[] = [];
      const runs = Number(args["large-runs"]);
      for (let i = 0; i < runs; i++) {
        const a = await inline();
        const s = await shared();
        // The data already in the region (a producer that writes its tensors there).
        const p = await shared(false);
        if (a.out !== s.out || a.out !== p.out)
          throw new Error(`inline and shared-memory answers differ: ${a.out} vs ${s.out}`);
        inlineMs.push(a.ms);
        sharedMs.push(s.ms);
        inPlaceMs.push(p.ms);
      }
      result.figure("large", {
        program: args["large-program"],
        inputBytes: bytes.byteLength,
        runs,
        inlineMs: inlineMs.map(round3),
        sharedMemoryMs: sharedMs.map(round3),
        inRegionMs: inPlaceMs.map(round3),
        inlineMedianMs: round3(median(inlineMs)),
        sharedMemoryMedianMs: round3(median(sharedMs)),
        inRegionMedianMs: round3(median(inPlaceMs)),
      });
      console.log(
        `  ${bytes.byteLength} B input: inline ${round3(median(inlineMs))} ms, shared memory ${round3(median(sharedMs))} ms`,
      );
      result.ratio(
        "large_input_shared_memory_speedup",
        { label: `inline ${Number(args["large-mb"])} MiB ModelInfer ms (median)`, value: median(inlineMs) },
        {
          label: "shared-memory ModelInfer ms incl. the client's copy into the region (median)",
          value: median(sharedMs),
        },
        ">= 5",
      );
      result.ratio(
        "large_input_in_region_speedup",
        { label: "inline ModelInfer ms (median)", value: median(inlineMs) },
        { label: "shared-memory ModelInfer ms, the data already in the region (median)", value: median(inPlaceMs) },
      );
      await client.call("systemSharedMemoryUnregister", { name: "bench" });
    } finally {
      rmSync(path, { force: true });
    }
  });
} finally {
  client.close();
  bare.forceShutdown();
  await worker.stop();
  rmSync(root, { recursive: true, force: true });
}
console.log(`results: ${result.write()}`);

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

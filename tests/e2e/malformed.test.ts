/**
 * Malformed requests against a running worker: each must be answered 4xx with {"error": "..."}
 * naming the tensor and the problem, and the worker must keep serving afterwards.
 *
 * Models used (the example bundles' specs): mlp (features FP32 [-1, 64] -> probabilities,
 * logits FP32 [-1, 10], batch <= 8), transformer (tokens INT32 [-1, 16], batch <= 4), and
 * checks (flags BOOL [-1, 3] + small INT8 [-1, 3]: two inputs of narrow types).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const MAX_BODY = 256 * 1024;
let target: MalformedTarget;
beforeAll(async () => {
  target = await startMalformedTarget(MAX_BODY);
});
afterAll(() => target?.stop());

const features = (n = 64) => Array.from({ length: n }, (_, i) => i / 64);
const mlpInput = (over: Record<string, unknown> = {}) => ({
  name: "features",
  shape: [1, 64],
  datatype: "FP32",
  data: features(),
  ...over,
});
const tokens = (over: Record<string, unknown> = {}) => ({
  name: "tokens",
  shape: [1, 16],
  datatype: "INT32",
  data: Array.from({ length: 16 }, (_, i) => i + 1),
  ...over,
});
const checksInputs = (flags: unknown[] = [true, false, true], small: unknown[] = [1, -2, 3]) => [
  { name: "flags", shape: [1, 3], datatype: "BOOL", data: flags },
  { name: "small", shape: [1, 3], datatype: "INT8", data: small },
];
const enc = (s: string) => new TextEncoder().encode(s);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
};
/** A binary-extension body: returns the body and its JSON header length. */
const binary = (header: unknown, data: Uint8Array) => {
  const json = enc(JSON.stringify(header));
  return { body: concat(json, data), length: json.byteLength };
};

interface Case {
  name: string;
  model?: string;
  path?: string;
  method?: string;
  body: string | Uint8Array | (() => string | Uint8Array | ReadableStream);
  headers?: Record<string, string>;
  status: number;
  /** Fragments the error message must contain (tensor name, problem). */
  error: (string | RegExp)[];
}

const bin = binary(
  { inputs: [mlpInput({ data: undefined, parameters: { binary_data_size: 255 } })] },
  new Uint8Array(255),
);
const binOk = binary(
  { inputs: [mlpInput({ data: undefined, parameters: { binary_data_size: 256 } })] },
  new Uint8Array(256),
);
const binLong = binary(
  { inputs: [mlpInput({ data: undefined, parameters: { binary_data_size: 256 } })] },
  new Uint8Array(260),
);
const json = (v: unknown) => JSON.stringify(v);

const CASES: Case[] = [
  // The body as a whole.
  { name: "truncated JSON", body: '{"inputs": [{"name": "features"', status: 400, error: ["not valid JSON"] },
  { name: "empty body", body: "", status: 400, error: ["not valid JSON"] },
  { name: "JSON array instead of an object", body: "[]", status: 400, error: ["request body", "JSON object"] },
  { name: "JSON string instead of an object", body: '"features"', status: 400, error: ["JSON object"] },
  { name: "no inputs field", body: json({ id: "x" }), status: 400, error: ["inputs"] },
  { name: "empty inputs list", body: json({ inputs: [] }), status: 400, error: ["inputs must be a non-empty list"] },
  {
    name: "id that is not a string",
    body: json({ id: 7, inputs: [mlpInput()] }),
    status: 400,
    error: ["id must be a string"],
  },
  {
    name: "invalid UTF-8 in the JSON",
    body: concat(enc('{"id":"'), new Uint8Array([0xff, 0xfe]), enc('","inputs":[]}')),
    status: 400,
    error: ["UTF-8"],
  },
  {
    name: "oversized body",
    body: () => json({ inputs: [mlpInput()], pad: "x".repeat(MAX_BODY) }),
    status: 413,
    error: ["exceeds the limit", String(MAX_BODY)],
  },
  {
    name: "oversized chunked body",
    body: () =>
      new ReadableStream({
        start(c) {
          for (let i = 0; i < 8; i++) c.enqueue(enc("x".repeat(MAX_BODY / 4)));
          c.close();
        },
      }),
    status: 413,
    error: ["exceeds the limit"],
  },
  {
    name: "corrupt gzip body",
    body: new Uint8Array([1, 2, 3, 4]),
    headers: { "content-encoding": "gzip" },
    status: 400,
    error: ["decompressed as gzip"],
  },
  {
    name: "unsupported Content-Encoding",
    body: json({ inputs: [mlpInput()] }),
    headers: { "content-encoding": "br-x" },
    status: 415,
    error: ["br-x"],
  },
  // Model and route.
  {
    name: "unknown model",
    model: "nope",
    body: json({ inputs: [mlpInput()] }),
    status: 404,
    error: ['unknown model "nope"'],
  },
  {
    name: "unknown version",
    path: "/v2/models/mlp/versions/99/infer",
    body: json({ inputs: [mlpInput()] }),
    status: 404,
    error: ['"mlp" has no version "99"'],
  },
  { name: "GET on the infer route", method: "GET", body: "", status: 404, error: ["no route"] },
  // Names.
  {
    name: "input without a name",
    body: json({ inputs: [mlpInput({ name: "" })] }),
    status: 400,
    error: ["non-empty string name"],
  },
  {
    name: "unknown input",
    body: json({ inputs: [mlpInput(), mlpInput({ name: "extra" })] }),
    status: 400,
    error: ['unknown input "extra"', "features"],
  },
  {
    name: "duplicate input",
    body: json({ inputs: [mlpInput(), mlpInput()] }),
    status: 400,
    error: ['input "features" appears more than once'],
  },
  {
    name: "missing input",
    model: "checks",
    body: json({ inputs: checksInputs().slice(0, 1) }),
    status: 400,
    error: ['missing input "small"', "INT8 [-1, 3]"],
  },
  {
    name: "unknown requested output",
    body: json({ inputs: [mlpInput()], outputs: [{ name: "scores" }] }),
    status: 400,
    error: ['unknown requested output "scores"', "probabilities, logits"],
  },
  {
    name: "duplicate requested output",
    body: json({ inputs: [mlpInput()], outputs: [{ name: "logits" }, { name: "logits" }] }),
    status: 400,
    error: ['requested output "logits" appears more than once'],
  },
  // Datatypes.
  {
    name: "wrong datatype",
    body: json({ inputs: [mlpInput({ datatype: "FP64" })] }),
    status: 400,
    error: ['input "features"', "FP64 does not match the model's FP32"],
  },
  {
    name: "unknown datatype",
    body: json({ inputs: [mlpInput({ datatype: "FLOAT32" })] }),
    status: 400,
    error: ['input "features"', 'unknown datatype "FLOAT32"'],
  },
  {
    name: "BYTES datatype",
    body: json({ inputs: [mlpInput({ datatype: "BYTES" })] }),
    status: 400,
    error: ['input "features"', "BYTES is not supported"],
  },
  // Shapes.
  {
    name: "wrong rank",
    body: json({ inputs: [mlpInput({ shape: [64] })] }),
    status: 400,
    error: ['input "features"', "has 1 axes", "[-1, 64]"],
  },
  {
    name: "wrong fixed dimension",
    body: json({ inputs: [mlpInput({ shape: [1, 63], data: features(63) })] }),
    status: 400,
    error: ['input "features"', "axis 1 is 63", "expects 64"],
  },
  {
    name: "negative dimension",
    body: json({ inputs: [mlpInput({ shape: [-1, 64] })] }),
    status: 400,
    error: ['input "features"', "non-negative integers"],
  },
  {
    name: "fractional dimension",
    body: json({ inputs: [mlpInput({ shape: [1.5, 64] })] }),
    status: 400,
    error: ['input "features"', "non-negative integers"],
  },
  {
    name: "batch 0",
    body: json({ inputs: [mlpInput({ shape: [0, 64], data: [] })] }),
    status: 400,
    error: ['input "features"', "batch size 0"],
  },
  {
    name: "batch above the maximum",
    body: json({ inputs: [mlpInput({ shape: [9, 64], data: new Array(9 * 64).fill(0) })] }),
    status: 400,
    error: ['input "features"', "batch size 9", "maximum batch size 8"],
  },
  {
    name: "inputs disagreeing on batch",
    model: "checks",
    body: json({
      inputs: [checksInputs()[0], { name: "small", shape: [2, 3], datatype: "INT8", data: [1, 2, 3, 4, 5, 6] }],
    }),
    status: 400,
    error: ['input "small" has batch size 2', 'input "flags" has 1'],
  },
  // Data.
  {
    name: "too few elements",
    body: json({ inputs: [mlpInput({ data: features(63) })] }),
    status: 400,
    error: ['input "features"', "63 elements", "needs 64"],
  },
  {
    name: "too many elements",
    body: json({ inputs: [mlpInput({ data: features(65) })] }),
    status: 400,
    error: ['input "features"', "65 elements", "needs 64"],
  },
  {
    name: "nested data, ragged",
    body: json({ inputs: [mlpInput({ shape: [2, 64], data: [features(64), features(63)] })] }),
    status: 400,
    error: ['input "features"', "63 elements at depth 1 but axis 1 of shape [2, 64] is 64"],
  },
  {
    name: "nested data mixing lists and numbers",
    body: json({ inputs: [mlpInput({ shape: [2, 64], data: [features(64), 5] })] }),
    status: 400,
    error: ['input "features"', "a scalar at depth 1, above the last axis of shape [2, 64]"],
  },
  {
    name: "nested data with too many elements",
    body: json({ inputs: [mlpInput({ shape: [1, 64], data: [features(64), features(64)] })] }),
    status: 400,
    error: ['input "features"', "2 elements at depth 0 but axis 0 of shape [1, 64] is 1"],
  },
  {
    name: "data that is not a list",
    body: json({ inputs: [mlpInput({ data: 5 })] }),
    status: 400,
    error: ['input "features"', "data must be a list"],
  },
  {
    name: "non-numeric element",
    body: json({ inputs: [mlpInput({ data: [...features(5), "abc", ...features(58)] })] }),
    status: 400,
    error: ['input "features"', 'element 5 ("abc")', "not a number"],
  },
  {
    name: "null element",
    body: json({ inputs: [mlpInput({ data: [null, ...features(63)] })] }),
    status: 400,
    error: ['input "features"', "element 0 (null)"],
  },
  {
    name: "neither data nor binary_data_size",
    body: json({ inputs: [mlpInput({ data: undefined })] }),
    status: 400,
    error: ['input "features" has neither data nor parameters.binary_data_size'],
  },
  {
    name: "NaN in an integer tensor",
    model: "transformer",
    body: '{"inputs":[{"name":"tokens","shape":[1,16],"datatype":"INT32","data":[1,2,3,NaN,5,6,7,8,9,10,11,12,13,14,15,16]}]}',
    status: 400,
    error: ['input "tokens"', "element 3 (NaN)", "INT32 takes integers"],
  },
  {
    name: "fraction in an integer tensor",
    model: "transformer",
    body: json({ inputs: [tokens({ data: [1.5, ...new Array(15).fill(1)] })] }),
    status: 400,
    error: ['input "tokens"', "element 0 (1.5) is not an integer"],
  },
  {
    name: "INT32 value out of range",
    model: "transformer",
    body: json({ inputs: [tokens({ data: [2 ** 31, ...new Array(15).fill(1)] })] }),
    status: 400,
    error: ['input "tokens"', "out of range for INT32"],
  },
  {
    name: "INT8 value out of range",
    model: "checks",
    body: json({ inputs: checksInputs([true, true, true], [1, 200, 3]) }),
    status: 400,
    error: ['input "small"', "element 1 (200) is out of range for INT8 [-128, 127]"],
  },
  {
    name: "BOOL given a number out of range",
    model: "checks",
    body: json({ inputs: checksInputs([true, 2, false]) }),
    status: 400,
    error: ['input "flags"', "element 1 (2) is not a BOOL"],
  },
  {
    name: "BOOL given a string",
    model: "checks",
    body: json({ inputs: checksInputs(["true", true, false]) }),
    status: 400,
    error: ['input "flags"', 'element 0 ("true")'],
  },
  // Parameters.
  {
    name: "binary_data_output not a boolean",
    body: json({ inputs: [mlpInput()], parameters: { binary_data_output: "yes" } }),
    status: 400,
    error: ["binary_data_output must be true or false"],
  },
  {
    name: "classification requested",
    body: json({ inputs: [mlpInput()], outputs: [{ name: "logits", parameters: { classification: 3 } }] }),
    status: 400,
    error: ['requested output "logits"', "classification"],
  },
  {
    name: "shared memory input of a region never registered",
    body: json({
      inputs: [mlpInput({ data: undefined, parameters: { shared_memory_region: "r0", shared_memory_byte_size: 256 } })],
    }),
    status: 400,
    error: ['input "features"', 'shared-memory region "r0" is not registered'],
  },
  // The binary tensor data extension.
  {
    name: "binary byte length does not match the shape",
    body: bin.body,
    headers: { "inference-header-content-length": String(bin.length) },
    status: 400,
    error: ['input "features"', "binary_data_size is 255 bytes", "needs 256"],
  },
  {
    name: "binary section longer than declared",
    body: binLong.body,
    headers: { "inference-header-content-length": String(binLong.length) },
    status: 400,
    error: ["binary section", "260 bytes", "add up to 256"],
  },
  {
    name: "binary data missing (no header-length header)",
    body: binOk.body.subarray(0, binOk.length),
    status: 400,
    error: ['input "features"', "runs past the end"],
  },
  {
    name: "binary_data_size negative",
    body: json({ inputs: [mlpInput({ data: undefined, parameters: { binary_data_size: -4 } })] }),
    status: 400,
    error: ['input "features"', "binary_data_size must be a non-negative integer"],
  },
  {
    name: "both data and binary_data_size",
    body: json({ inputs: [mlpInput({ parameters: { binary_data_size: 256 } })] }),
    status: 400,
    error: ['input "features" has both data and parameters.binary_data_size'],
  },
  {
    name: "Inference-Header-Content-Length past the body",
    body: binOk.body,
    headers: { "inference-header-content-length": String(binOk.body.byteLength + 10) },
    status: 400,
    error: ["Inference-Header-Content-Length", "past the end"],
  },
  {
    name: "Inference-Header-Content-Length not a number",
    body: binOk.body,
    headers: { "inference-header-content-length": "twelve" },
    status: 400,
    error: ['"twelve" is not a non-negative integer'],
  },
  {
    name: "Inference-Header-Content-Length cutting the JSON",
    body: binOk.body,
    headers: { "inference-header-content-length": String(binOk.length - 5) },
    status: 400,
    error: ["request header is not valid JSON"],
  },
  {
    name: "Inference-Header-Content-Length zero",
    body: binOk.body,
    headers: { "inference-header-content-length": "0" },
    status: 400,
    error: ["JSON request header is missing"],
  },
];

describe("malformed requests", () => {
  test("the list is long enough", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of CASES) {
    test(`${c.name} -> ${c.status}`, async () => {
      const path = c.path ?? `/v2/models/${c.model ?? "mlp"}/infer`;
      const raw = typeof c.body === "function" ? c.body() : c.body;
      const method = c.method ?? "POST";
      const response = await fetch(target.url + path, {
        method,
        headers: {
          "content-type": raw instanceof Uint8Array ? "application/octet-stream" : "application/json",
          ...c.headers,
        },
        body: method === "GET" ? undefined : (raw as BodyInit),
      });
      const text = await response.text();
      expect({ status: response.status, text }).toMatchObject({ status: c.status });
      expect(response.headers.get("content-type")).toContain("application/json");
      const body = JSON.parse(text) as { error?: unknown };
      if (process.env.XLASERVE_SHOW_ERRORS) console.log(`${c.name}: ${response.status} ${body.error}`);
      expect(Object.keys(body)).toEqual(["error"]);
      expect(typeof body.error).toBe("string");
      for (const fragment of c.error) {
        if (typeof fragment === "string") expect(body.error as string).toContain(fragment);
        else expect(body.error as string).toMatch(fragment);
      }
    });
  }

  test("after all of them the worker still answers a valid request correctly", async () => {
    expect((await fetch(`${target.url}/v2/health/live`)).status).toBe(200);
    const response = await fetch(`${target.url}/v2/models/mlp/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: json({ id: "after-malformed", inputs: [mlpInput()] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      id: string;
      outputs: { name: string; shape: number[]; data: number[] }[];
    };
    expect(body.id).toBe("after-malformed");
    const probabilities = body.outputs.find((o) => o.name === "probabilities");
    expect(probabilities?.shape).toEqual([1, 10]);
    const sum = (probabilities?.data ?? []).reduce((a, b) => a + b, 0);
    expect(Math.abs(sum - 1)).toBeLessThan(1e-4);
    // The malformed requests were counted as client errors, not lost.
    const metrics = await (await fetch(`${target.url}/metrics`)).text();
    expect(metrics).toMatch(/worker_requests_total\{model="mlp",status="400",protocol="http"\} \d+/);
  });

  test("the two-input BOOL/INT8 bundle answers a valid request exactly", async () => {
    const response = await fetch(`${target.url}/v2/models/checks/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: json({ inputs: checksInputs([true, false, 1], [-128, 0, 127]) }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { outputs: { name: string; datatype: string; data: unknown[] }[] };
    expect(body.outputs).toEqual([
      { name: "not_flags", datatype: "BOOL", shape: [1, 3], data: [false, true, false] },
      // -(-128) wraps to -128 in two's complement INT8, as XLA computes it.
      { name: "neg_small", datatype: "INT8", shape: [1, 3], data: [-128, 0, -127] },
    ] as never);
  });

  test("a gzip body that is valid also works (the failing cases were about the bytes, not the route)", async () => {
    const response = await fetch(`${target.url}/v2/models/mlp/infer`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(enc(json({ inputs: [mlpInput()] }))),
    });
    expect(response.status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// The target: the real worker (apps/worker's startWorker, CPU engine) over a temp repository
// holding the mlp and transformer examples plus "checks", a two-input BOOL/INT8 bundle written
// here. XLASERVE_MALFORMED_TARGET=registry runs the same list against the server package's test
// registry instead (models with identical specs), to separate HTTP-layer failures from worker ones.

interface MalformedTarget {
  readonly url: string;
  readonly kind: "worker" | "registry";
  stop(): Promise<void>;
}

async function startMalformedTarget(maxBodyBytes: number): Promise<MalformedTarget> {
  if (process.env.XLASERVE_MALFORMED_TARGET === "registry") return startRegistryTarget(maxBodyBytes);
  const root = mkdtempSync(join(tmpdir(), "xlaserve-malformed-"));
  const repository = join(root, "models");
  const examples = resolve(import.meta.dir, "../../examples/models");
  for (const name of ["mlp", "transformer"]) {
    cpSync(join(examples, name), join(repository, name), {
      recursive: true,
      filter: (src) => !src.includes(".cache") && !src.endsWith("reference.safetensors"),
    });
  }
  writeChecksBundle(join(repository, "checks"));
  const { startWorker } = await import("../../apps/worker/src/index.ts");
  const { createLogger } = await import("@xlaserve/core");
  const worker = await startWorker({
    repository,
    host: "127.0.0.1",
    port: 0,
    env: {},
    logger: createLogger({ level: "error" }),
    config: {
      // The CPU engine on any host (engine auto would pick PJRT where a plugin loads), as startCpuWorker does.
      engine: "reactant",
      server: { maxBodyBytes },
      cache: { stateDir: join(root, "state") },
      repository: { dynamic: false },
    },
  });
  return {
    url: worker.url,
    kind: "worker",
    stop: async () => {
      await worker.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function startRegistryTarget(maxBodyBytes: number): Promise<MalformedTarget> {
  const { createLogger } = await import("@xlaserve/core");
  const server = await import("@xlaserve/server");
  const { TestRegistry } = await import("../../packages/server/test/support/test-registry.ts");
  const app = server.createServerApp({
    registry: new TestRegistry(),
    logger: createLogger({ level: "error" }),
    metrics: new server.Metrics(),
    config: { maxBodyBytes },
  });
  const running = server.startServer(app, { host: "127.0.0.1", port: 0 });
  return { url: running.url, kind: "registry", stop: () => running.stop(true) };
}

/** "checks": flags BOOL [-1, 3], small INT8 [-1, 3] -> not_flags, neg_small; batches 1 and 4. */
function writeChecksBundle(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const tensor = (name: string, dtype: string) =>
    `  - name: "${name}"\n    dtype: "${dtype}"\n    shape: "cn"\n    dims:\n      c: 3\n`;
  writeFileSync(
    join(dir, "manifest.yaml"),
    `format_version: "2.0"\nname: "checks"\ndescription: "two inputs of narrow types for the malformed-request tests"\n` +
      `executable_inputs:\n${tensor("flags", "bool")}${tensor("small", "i8")}` +
      `executable_outputs:\n${tensor("not_flags", "bool")}${tensor("neg_small", "i8")}` +
      "batching:\n  compiled_batch_sizes:\n    - 1\n    - 4\n",
  );
  for (const n of [1, 4]) {
    writeFileSync(
      join(dir, `model.b${n}.mlir`),
      `module @checks {
  func.func public @main(%arg0: tensor<${n}x3xi1>, %arg1: tensor<${n}x3xi8>, %arg2: tensor<1xf32>) -> (tensor<${n}x3xi1>, tensor<${n}x3xi8>) {
    %0 = stablehlo.not %arg0 : tensor<${n}x3xi1>
    %1 = stablehlo.negate %arg1 : tensor<${n}x3xi8>
    return %0, %1 : tensor<${n}x3xi1>, tensor<${n}x3xi8>
  }
}
`,
    );
  }
  // One unused weight: the bundle format wants weights.safetensors with an argument order.
  const header = JSON.stringify({
    __metadata__: { argument_order: JSON.stringify(["unused"]) },
    unused: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
  });
  const padded = header.padEnd(Math.ceil(header.length / 8) * 8, " ");
  const bytes = new Uint8Array(8 + padded.length + 4);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(padded.length), true);
  bytes.set(new TextEncoder().encode(padded), 8);
  writeFileSync(join(dir, "weights.safetensors"), bytes);
}

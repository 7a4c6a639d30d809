/**
 * Shared helpers for the worker's tests: temp model repositories copied from examples/models,
 * weight edits that make a new version distinguishable, a log collector, HTTP clients for the
 * KServe v2 JSON and binary protocols, and reference comparison.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type HostTensor, type Logger, createLogger } from "@xlaserve/core";
import { openSafetensors } from "@xlaserve/core/bundle/safetensors.ts";

export const EXAMPLES = resolve(import.meta.dir, "../../examples/models");
export const EXAMPLE_MODELS = ["mlp", "cnn", "transformer"] as const;

export interface TempRepo {
  readonly root: string;
  readonly repository: string;
  readonly stateDir: string;
  cleanup(): void;
}

/** A temp dir with `models/` holding copies of the given example bundles (no .cache/). */
export function makeRepo(models: readonly string[] = EXAMPLE_MODELS): TempRepo {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-test-"));
  const repository = join(root, "models");
  for (const m of models) copyBundle(m, join(repository, m));
  return {
    root,
    repository,
    stateDir: join(root, "state"),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Copies an example bundle's own files (never its .cache/ or reference file). */
export function copyBundle(example: string, to: string): void {
  cpSync(join(EXAMPLES, example), to, {
    recursive: true,
    filter: (src) => !src.includes("/.cache") && !src.endsWith("reference.safetensors"),
  });
}

/**
 * Rewrites a bundle's weights.safetensors with the named tensors (default: every tensor whose name
 * ends in "bias") multiplied by `factor`, via a temp file renamed over the original (atomic), and
 * the manifest's provenance.weights_sha256 to match, as an exporter writes a new version.
 */
export function scaleWeights(
  bundleDir: string,
  factor: number,
  match: (name: string) => boolean = (n) => n.endsWith("bias"),
): void {
  const path = join(bundleDir, "weights.safetensors");
  const bytes = new Uint8Array(readFileSync(path));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const base = 8 + headerLen;
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__" || info.dtype !== "F32" || !match(name)) continue;
    const [a, b] = info.data_offsets;
    for (let o = base + a; o < base + b; o += 4) view.setFloat32(o, view.getFloat32(o, true) * factor, true);
  }
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
  const manifest = join(bundleDir, "manifest.yaml");
  const sha = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
  const text = readFileSync(manifest, "utf8").replace(/weights_sha256: "[0-9a-f]{64}"/, `weights_sha256: "${sha}"`);
  writeFileSync(`${manifest}.tmp-${process.pid}`, text);
  renameSync(`${manifest}.tmp-${process.pid}`, manifest);
}

export interface LogCollector {
  readonly logger: Logger;
  readonly lines: Array<Record<string, unknown>>;
  find(msg: string): Array<Record<string, unknown>>;
}

export function collectLogs(echo = !!process.env.XLASERVE_TEST_LOGS): LogCollector {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: "debug",
    format: "json",
    sink: (line) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      if (echo) process.stderr.write(`${line}\n`);
    },
  });
  return { logger, lines, find: (msg) => lines.filter((l) => l.msg === msg) };
}

/** The reference inputs and XLA-CPU outputs of an example bundle, by batch size. */
export function readReference(
  example: string,
): Map<number, { inputs: Map<string, HostTensor>; outputs: Map<string, HostTensor> }> {
  const file = openSafetensors(join(EXAMPLES, example, "reference.safetensors"));
  const out = new Map<number, { inputs: Map<string, HostTensor>; outputs: Map<string, HostTensor> }>();
  for (const name of file.tensors.keys()) {
    const m = /^b(\d+)\/(inputs|outputs)\/(.+)$/.exec(name);
    if (!m) continue;
    const batch = Number(m[1]);
    let entry = out.get(batch);
    if (!entry) {
      entry = { inputs: new Map(), outputs: new Map() };
      out.set(batch, entry);
    }
    const t = file.tensor(name);
    const copy: HostTensor = { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() };
    (m[2] === "inputs" ? entry.inputs : entry.outputs).set(m[3] as string, copy);
  }
  return out;
}

const KSERVE: Record<string, string> = {
  f32: "FP32",
  f64: "FP64",
  i32: "INT32",
  i64: "INT64",
  f16: "FP16",
  bf16: "BF16",
  u8: "UINT8",
  i8: "INT8",
  bool: "BOOL",
};

export interface InferOutput {
  name: string;
  datatype: string;
  shape: number[];
  data: number[];
}

/** An FP32 infer request's JSON text for `inputs` (flat data), with an optional id. */
export function f32JsonBody(inputs: Map<string, HostTensor>, id?: string): string {
  return JSON.stringify({
    id,
    inputs: [...inputs].map(([name, t]) => ({
      name,
      datatype: "FP32",
      shape: t.shape,
      data: Array.from(t.data as Float32Array),
    })),
  });
}

/**
 * A binary tensor data request for one FP32 input, asking for binary outputs: the body and the
 * Inference-Header-Content-Length to send with it.
 */
export function f32BinaryBody(inputs: Map<string, HostTensor>): {
  body: Uint8Array<ArrayBuffer>;
  headerLength: number;
} {
  const [[name, t]] = [...inputs] as [[string, HostTensor]];
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: [{ name, datatype: "FP32", shape: t.shape, parameters: { binary_data_size: t.data.byteLength } }],
      parameters: { binary_data_output: true },
    }),
  );
  const body = new Uint8Array(header.byteLength + t.data.byteLength);
  body.set(header, 0);
  body.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), header.byteLength);
  return { body, headerLength: header.byteLength };
}

/** POST .../infer with JSON tensors. */
export async function inferJson(
  url: string,
  model: string,
  inputs: Map<string, HostTensor>,
  init: { id?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; outputs: Map<string, InferOutput> }> {
  const body = {
    id: init.id,
    inputs: [...inputs].map(([name, t]) => ({
      name,
      datatype: KSERVE[t.dtype],
      shape: t.shape,
      data: Array.from(t.data as Float32Array, Number),
    })),
  };
  const res = await fetch(`${url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  const outputs = new Map<string, InferOutput>();
  for (const o of (json.outputs as InferOutput[] | undefined) ?? []) outputs.set(o.name, o);
  return { status: res.status, body: json, outputs };
}

/** POST .../infer with the binary tensor data extension, asking for binary outputs. */
export async function inferBinary(
  url: string,
  model: string,
  inputs: Map<string, HostTensor>,
): Promise<{
  status: number;
  outputs: Map<string, { shape: number[]; datatype: string; data: Float32Array | Int32Array | Uint8Array }>;
  error?: string;
}> {
  const chunks: Uint8Array[] = [];
  const header = {
    inputs: [...inputs].map(([name, t]) => {
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      chunks.push(bytes);
      return { name, datatype: KSERVE[t.dtype], shape: t.shape, parameters: { binary_data_size: bytes.byteLength } };
    }),
    parameters: { binary_data_output: true },
  };
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const body = new Uint8Array(headerBytes.byteLength + chunks.reduce((a, c) => a + c.byteLength, 0));
  body.set(headerBytes, 0);
  let off = headerBytes.byteLength;
  for (const c of chunks) {
    body.set(c, off);
    off += c.byteLength;
  }
  const res = await fetch(`${url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(headerBytes.byteLength),
    },
    body,
  });
  const raw = new Uint8Array(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, outputs: new Map(), error: new TextDecoder().decode(raw) };
  const hlen = Number(res.headers.get("inference-header-content-length") ?? raw.byteLength);
  const json = JSON.parse(new TextDecoder().decode(raw.subarray(0, hlen))) as {
    outputs: Array<{
      name: string;
      datatype: string;
      shape: number[];
      data?: number[];
      parameters?: { binary_data_size?: number };
    }>;
  };
  const outputs = new Map<
    string,
    { shape: number[]; datatype: string; data: Float32Array | Int32Array | Uint8Array }
  >();
  let pos = hlen;
  for (const o of json.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) {
      outputs.set(o.name, { shape: o.shape, datatype: o.datatype, data: Float32Array.from(o.data ?? []) });
      continue;
    }
    const slice = raw.slice(pos, pos + size);
    pos += size;
    const data =
      o.datatype === "FP32"
        ? new Float32Array(slice.buffer)
        : o.datatype === "INT32"
          ? new Int32Array(slice.buffer)
          : slice;
    outputs.set(o.name, { shape: o.shape, datatype: o.datatype, data });
  }
  return { status: res.status, outputs };
}

/** Largest |a - b| / max(|b|, floor) over the elements (floor keeps near-zero values sane). */
export function maxRelError(actual: ArrayLike<number>, expected: ArrayLike<number>, floor = 1e-3): number {
  if (actual.length !== expected.length) return Number.POSITIVE_INFINITY;
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = Number(actual[i]);
    const e = Number(expected[i]);
    const err = Math.abs(a - e) / Math.max(Math.abs(e), floor);
    if (!(err <= worst)) worst = err;
  }
  return worst;
}

export function exists(path: string): boolean {
  return existsSync(path);
}

/** Waits until `fn` returns truthy (polling), or throws after `timeoutMs`. */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 20_000, stepMs = 25): Promise<NonNullable<T>> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms`);
    await Bun.sleep(stepMs);
  }
}

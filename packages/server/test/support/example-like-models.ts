import type { HostTensor } from "@xlaserve/core";
import { FunctionModel } from "./test-models.ts";
import { spec } from "./specs.ts";

/**
 * Stand-ins with the example bundles' exact client specs (examples/models/mlp and transformer),
 * computing real functions in plain TypeScript. They let the HTTP tests and the bench run without
 * the worker, with the same request and response sizes as the real models.
 */

/** Deterministic pseudo-random weights in [-0.1, 0.1). */
function weights(count: number, seed: number): Float32Array {
  const w = new Float32Array(count);
  let s = seed >>> 0;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    w[i] = (s / 2 ** 32 - 0.5) * 0.2;
  }
  return w;
}

function dense(
  x: Float32Array,
  rows: number,
  inDim: number,
  w: Float32Array,
  outDim: number,
  relu: boolean,
): Float32Array {
  // Row of x times w, accumulated along w's contiguous rows (the cache-friendly order).
  const y = new Float32Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    const yr = y.subarray(r * outDim, (r + 1) * outDim);
    for (let i = 0; i < inDim; i++) {
      const xi = x[r * inDim + i] as number;
      if (xi === 0) continue;
      const base = i * outDim;
      for (let o = 0; o < outDim; o++) yr[o] = (yr[o] as number) + xi * (w[base + o] as number);
    }
    if (relu) for (let o = 0; o < outDim; o++) if ((yr[o] as number) < 0) yr[o] = 0;
  }
  return y;
}

function softmax(logits: Float32Array, rows: number, width: number): Float32Array {
  const p = new Float32Array(logits.length);
  for (let r = 0; r < rows; r++) {
    let max = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < width; c++) max = Math.max(max, logits[r * width + c] as number);
    let sum = 0;
    for (let c = 0; c < width; c++) sum += p[r * width + c] = Math.exp((logits[r * width + c] as number) - max);
    for (let c = 0; c < width; c++) p[r * width + c] = (p[r * width + c] as number) / sum;
  }
  return p;
}

/** features FP32 [-1, 64] -> probabilities, logits FP32 [-1, 10]; 64-256-256-10 with ReLU. */
export function mlpLikeModel(): FunctionModel {
  const w1 = weights(64 * 256, 1);
  const w2 = weights(256 * 256, 2);
  const w3 = weights(256 * 10, 3);
  return new FunctionModel(
    "mlp",
    [spec("features", "f32", [-1, 64])],
    [spec("probabilities", "f32", [-1, 10]), spec("logits", "f32", [-1, 10])],
    (inputs) => {
      const x = inputs.get("features") as HostTensor;
      const rows = x.shape[0] as number;
      const h1 = dense(x.data as Float32Array, rows, 64, w1, 256, true);
      const h2 = dense(h1, rows, 256, w2, 256, true);
      const logits = dense(h2, rows, 256, w3, 10, false);
      return new Map([
        ["probabilities", { dtype: "f32", shape: [rows, 10], data: softmax(logits, rows, 10) }],
        ["logits", { dtype: "f32", shape: [rows, 10], data: logits }],
      ]);
    },
    [1, 8],
  );
}

/** tokens INT32 [-1, 16] -> logits FP32 [-1, 4]: a bag-of-tokens linear classifier. */
export function transformerLikeModel(): FunctionModel {
  const table = weights(4 * 1024, 4);
  return new FunctionModel(
    "transformer",
    [spec("tokens", "i32", [-1, 16])],
    [spec("logits", "f32", [-1, 4])],
    (inputs) => {
      const t = inputs.get("tokens") as HostTensor;
      const rows = t.shape[0] as number;
      const logits = new Float32Array(rows * 4);
      for (let r = 0; r < rows; r++) {
        for (let i = 0; i < 16; i++) {
          const token = ((t.data[r * 16 + i] as number) & 1023) * 4;
          for (let c = 0; c < 4; c++) logits[r * 4 + c] = (logits[r * 4 + c] as number) + (table[token + c] as number);
        }
      }
      return new Map([["logits", { dtype: "f32", shape: [rows, 4], data: logits }]]);
    },
    [1, 4],
  );
}

/** flags BOOL [-1, 3] and small INT8 [-1, 3] -> not flags, -small: two inputs of narrow types. */
export function checksModel(): FunctionModel {
  return new FunctionModel(
    "checks",
    [spec("flags", "bool", [-1, 3]), spec("small", "i8", [-1, 3])],
    [spec("not_flags", "bool", [-1, 3]), spec("neg_small", "i8", [-1, 3])],
    (inputs) => {
      const flags = inputs.get("flags") as HostTensor;
      const small = inputs.get("small") as HostTensor;
      const notFlags = (flags.data as Uint8Array).map((v) => (v ? 0 : 1));
      const neg = (small.data as Int8Array).map((v) => -v);
      return new Map<string, HostTensor>([
        ["not_flags", { dtype: "bool", shape: [...flags.shape], data: notFlags }],
        ["neg_small", { dtype: "i8", shape: [...small.shape], data: neg }],
      ]);
    },
    [1, 4],
  );
}

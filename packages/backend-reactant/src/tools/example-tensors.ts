/**
 * The example bundles (examples/models/<model>) as the measuring tools read them: a minimal
 * safetensors reader and the argument list of one batch size. Kept inside the tools so they run
 * without the core bundle loader's checks.
 */
import { readFileSync } from "node:fs";
import type { DType, HostTensor } from "@xlaserve/core";

export const EXAMPLES = new URL("../../../../examples/models/", import.meta.url).pathname;

/** Every (model, batch size) the example bundles compile. */
export const EXAMPLE_CASES = [
  ["mlp", 1],
  ["mlp", 8],
  ["cnn", 1],
  ["cnn", 4],
  ["transformer", 1],
  ["transformer", 4],
] as const;

const SAFETENSORS_DTYPES: Record<string, DType> = {
  F32: "f32",
  F64: "f64",
  I32: "i32",
  I64: "i64",
  F16: "f16",
  BF16: "bf16",
};

/** Every tensor of a known dtype in a safetensors file, and its __metadata__. */
export function readTensors(path: string): { metadata: Record<string, string>; tensors: Map<string, HostTensor> } {
  const bytes = new Uint8Array(readFileSync(path));
  const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const tensors = new Map<string, HostTensor>();
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets } = info as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const d = SAFETENSORS_DTYPES[dtype];
    if (!d) continue;
    const raw = bytes.slice(8 + headerLength + data_offsets[0], 8 + headerLength + data_offsets[1]).buffer;
    const data = d === "f32" ? new Float32Array(raw) : d === "i32" ? new Int32Array(raw) : new Float64Array(raw);
    tensors.set(name, { dtype: d, shape, data });
  }
  return { metadata: header.__metadata__ ?? {}, tensors };
}

/** What model.b<batch>.mlir takes: the reference inputs of that batch size, then the weights in argument order. */
export function exampleArguments(model: string, batch: number): HostTensor[] {
  const dir = `${EXAMPLES}${model}`;
  const weights = readTensors(`${dir}/weights.safetensors`);
  const reference = readTensors(`${dir}/reference.safetensors`);
  const inputs = [...reference.tensors].filter(([k]) => k.startsWith(`b${batch}/inputs/`)).map(([, t]) => t);
  const order = JSON.parse(weights.metadata.argument_order ?? "[]") as string[];
  return [...inputs, ...order.map((n) => weights.tensors.get(n) as HostTensor)];
}

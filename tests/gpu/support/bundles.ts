import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { HostTensor, ModuleSource } from "@xlaserve/core";
import { readSafetensors } from "./safetensors.ts";

export const EXAMPLES = resolve(import.meta.dir, "../../../examples/models");
export const BUNDLES = ["mlp", "cnn", "transformer"] as const;

export interface BundleCase {
  readonly model: string;
  readonly batch: number;
  readonly module: ModuleSource;
  /** Model inputs, then weights in argument order. */
  readonly args: HostTensor[];
  readonly outputNames: string[];
  readonly expectedGpu: HostTensor[];
  readonly expectedCpu: HostTensor[];
}

/** Every (bundle, compiled batch size) of the examples, read straight from the files. */
export function bundleCases(model: string): BundleCase[] {
  const dir = join(EXAMPLES, model);
  const weights = readSafetensors(join(dir, "weights.safetensors"));
  const reference = readSafetensors(join(dir, "reference.safetensors"));
  const order = JSON.parse(weights.metadata.argument_order ?? "[]") as string[];
  const batches = JSON.parse(reference.metadata.batch_sizes ?? "[]") as number[];
  const outputNames = JSON.parse(reference.metadata.outputs ?? "[]") as string[];
  return batches.map((batch) => {
    const inputNames = reference.names.filter((n) => n.startsWith(`b${batch}/inputs/`));
    const file = join(dir, `model.b${batch}.mlir`);
    return {
      model,
      batch,
      module: { bytes: new Uint8Array(readFileSync(file)), format: "text", origin: `${model}/model.b${batch}.mlir` },
      args: [...inputNames.map((n) => reference.tensor(n)), ...order.map((n) => weights.tensor(n))],
      outputNames,
      expectedGpu: outputNames.map((n) => reference.tensor(`b${batch}/outputs_gpu/${n}`)),
      expectedCpu: outputNames.map((n) => reference.tensor(`b${batch}/outputs/${n}`)),
    };
  });
}

export function maxAbsDiff(a: HostTensor, b: HostTensor): number {
  let max = 0;
  const x = a.data as unknown as ArrayLike<number>;
  const y = b.data as unknown as ArrayLike<number>;
  for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(Number(x[i]) - Number(y[i])));
  return max;
}

export function sameBytes(a: HostTensor, b: HostTensor): boolean {
  return Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength).equals(
    Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength),
  );
}

import { readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
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

/** Every (bundle, compiled batch size) of an example (or of a bundle directory), read from its files. */
export function bundleCases(model: string): BundleCase[] {
  const dir = resolve(EXAMPLES, model);
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
      module: {
        bytes: new Uint8Array(readFileSync(file)),
        format: "text",
        origin: `${basename(dir)}/model.b${batch}.mlir`,
      },
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

/**
 * The tolerance against an XLA reference: outputs of two compiles of one module may differ in
 * the last bits (the autotuner may pick other kernels; TF32 convolutions), so the bound scales
 * with the reference's magnitude.
 */
export function tolerance(reference: HostTensor, relative: number): number {
  let max = 1;
  const x = reference.data as unknown as ArrayLike<number>;
  for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(Number(x[i])));
  return relative * max;
}

export function sameBytes(a: HostTensor, b: HostTensor): boolean {
  return Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength).equals(
    Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength),
  );
}

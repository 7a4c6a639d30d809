import { readFileSync } from "node:fs";
import type { NDArray } from "../../src/array.ts";
import { readSafetensors } from "./safetensors.ts";

export const REPO_ROOT = new URL("../../../../", import.meta.url).pathname;
export const EXAMPLES = `${REPO_ROOT}examples/models`;

/** One compiled batch size of an example bundle with its XLA-CPU reference. */
export interface ExampleCase {
  readonly model: string;
  readonly batch: number;
  readonly mlir: string;
  /** Inputs then weights, in call order. */
  readonly args: NDArray[];
  /** Reference outputs in the module's result order. */
  readonly expected: { name: string; value: NDArray }[];
}

/** Output names in manifest order (the module returns them in this order). */
function outputNames(manifest: string): string[] {
  const section = manifest.split(/^executable_outputs:\s*$/m)[1] ?? "";
  const body = section.split(/^\S/m)[0] ?? "";
  return [...body.matchAll(/-\s*name:\s*"?([\w.]+)"?/g)].map((m) => m[1] as string);
}

function inputNames(manifest: string): string[] {
  const section = manifest.split(/^executable_inputs:\s*$/m)[1] ?? "";
  const body = section.split(/^\S/m)[0] ?? "";
  return [...body.matchAll(/-\s*name:\s*"?([\w.]+)"?/g)].map((m) => m[1] as string);
}

export function loadExample(model: string, batch: number): ExampleCase {
  const dir = `${EXAMPLES}/${model}`;
  const manifest = readFileSync(`${dir}/manifest.yaml`, "utf8");
  const weights = readSafetensors(`${dir}/weights.safetensors`);
  const reference = readSafetensors(`${dir}/reference.safetensors`);
  const order = JSON.parse(weights.metadata.argument_order ?? "[]") as string[];
  const args: NDArray[] = [];
  for (const name of inputNames(manifest)) {
    const input = reference.tensors.get(`b${batch}/inputs/${name}`);
    if (!input) throw new Error(`reference lacks b${batch}/inputs/${name}`);
    args.push(input);
  }
  for (const name of order) args.push(weights.tensors.get(name) as NDArray);
  const expected = outputNames(manifest).map((name) => ({
    name,
    value: reference.tensors.get(`b${batch}/outputs/${name}`) as NDArray,
  }));
  return { model, batch, mlir: readFileSync(`${dir}/model.b${batch}.mlir`, "utf8"), args, expected };
}

/** Largest absolute difference and largest f32 ULP distance between two f32 arrays. */
export function compareF32(actual: NDArray, expected: NDArray): { maxAbs: number; maxUlp: number } {
  const a = actual.data as Float32Array;
  const e = expected.data as Float32Array;
  const ai = new Int32Array(a.buffer, a.byteOffset, a.length);
  const ei = new Int32Array(e.buffer, e.byteOffset, e.length);
  let maxAbs = 0;
  let maxUlp = 0;
  for (let i = 0; i < a.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs((a[i] as number) - (e[i] as number)));
    const ka = (ai[i] as number) < 0 ? -((ai[i] as number) & 0x7fffffff) : (ai[i] as number);
    const ke = (ei[i] as number) < 0 ? -((ei[i] as number) & 0x7fffffff) : (ei[i] as number);
    maxUlp = Math.max(maxUlp, Math.abs(ka - ke));
  }
  return { maxAbs, maxUlp };
}

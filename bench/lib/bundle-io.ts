/**
 * Bundle helpers shared by the benchmarks: the module of a batch size, the reference inputs and
 * outputs written by tools/export_jax_bundle.py (reference.safetensors), zero inputs, weight
 * upload, compile-and-serialize, timed executions, and byte comparison and hashes of outputs.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type AbstractBackend,
  type Bundle,
  type BundleModule,
  type DeviceBuffer,
  type Executable,
  type HostTensor,
  allocTyped,
  openSafetensors,
  tensorBytes,
  typedAsBytes,
  uploadAll,
  zeros,
} from "@xlaserve/core";

export { uploadAll };

/** The module that runs `batch` (model.b{N}.mlir, or the single model.mlir). Variants: the first. */
export function moduleFor(bundle: Bundle, batch: number): BundleModule {
  const exact = bundle.modules.find((m) => m.batchSize === batch && (m.variant === null || m.variant === 0));
  if (exact) return exact;
  const single = bundle.modules.find((m) => m.batchSize === null);
  if (single && bundle.manifest.compiledBatchSizes.includes(batch)) return single;
  throw new Error(
    `bundle ${bundle.name} has no module for batch ${batch} (compiled sizes ${bundle.manifest.compiledBatchSizes.join(",")})`,
  );
}

export function batchSizes(bundle: Bundle): number[] {
  return [...bundle.manifest.compiledBatchSizes];
}

function referenceFile(bundle: Bundle) {
  const path = join(bundle.dir, "reference.safetensors");
  return existsSync(path) ? openSafetensors(path, { bundle: bundle.name }) : null;
}

/** Seeded reference inputs for a batch size, in manifest input order; null where not stored. */
export function referenceInputs(bundle: Bundle, batch: number): HostTensor[] | null {
  const ref = referenceFile(bundle);
  if (!ref) return null;
  const out: HostTensor[] = [];
  for (const spec of bundle.manifest.executableInputs) {
    const key = `b${batch}/inputs/${spec.name}`;
    if (!ref.tensors.has(key)) return null;
    out.push(copyTensor(ref.tensor(key)));
  }
  return out;
}

/** XLA's outputs for the reference inputs: `outputs` (CPU) or `outputs_gpu`; null where absent. */
export function referenceOutputs(bundle: Bundle, batch: number, which: "outputs" | "outputs_gpu"): HostTensor[] | null {
  const ref = referenceFile(bundle);
  if (!ref) return null;
  const out: HostTensor[] = [];
  for (const spec of bundle.manifest.executableOutputs) {
    const key = `b${batch}/${which}/${spec.name}`;
    if (!ref.tensors.has(key)) return null;
    out.push(copyTensor(ref.tensor(key)));
  }
  return out;
}

/** Zero inputs of the module's exact shapes (from its @main signature, else the manifest). */
export function zeroInputs(bundle: Bundle, module: BundleModule, batch: number): HostTensor[] {
  const specs = bundle.manifest.executableInputs;
  return specs.map((spec, i) => {
    const sig = module.signature?.args[i];
    if (sig) return zeros(sig.dtype, sig.shape);
    const shape = spec.dims.map((d) => {
      if (d.kind === "batch") return batch;
      if (d.kind === "fixed") return d.size;
      throw new Error(`bundle ${bundle.name}: input ${spec.name} has a variable axis; zero inputs need its size`);
    });
    return zeros(spec.dtype, shape);
  });
}

/** Reference inputs where stored, else zeros; says which. */
export function inputsFor(
  bundle: Bundle,
  module: BundleModule,
  batch: number,
): { tensors: HostTensor[]; source: "reference" | "zeros" } {
  const ref = referenceInputs(bundle, batch);
  return ref ? { tensors: ref, source: "reference" } : { tensors: zeroInputs(bundle, module, batch), source: "zeros" };
}

/** A tensor copied into its own ArrayBuffer (never a view into a mapped file). */
export function copyTensor(t: HostTensor): HostTensor {
  const data = allocTyped(t.dtype, t.data.length);
  typedAsBytes(data).set(tensorBytes(t));
  return { dtype: t.dtype, shape: [...t.shape], data };
}

/** Uploads every weight in argument order (the call order after the inputs), all in flight at once. */
export function uploadWeights(backend: AbstractBackend, bundle: Bundle): Promise<DeviceBuffer[]> {
  return uploadAll(
    backend,
    bundle.weights.argumentOrder.map((name) => bundle.weights.tensor(name)),
  );
}

/** The module compiled and serialized, for loading elsewhere; the compiled program is freed. */
export async function compileSerialized(backend: AbstractBackend, module: BundleModule): Promise<Uint8Array> {
  const exe = await backend.compile({ bytes: await module.read(), format: module.format }, {});
  try {
    return await backend.serialize(exe);
  } finally {
    exe.dispose();
  }
}

export function disposeAll(buffers: readonly DeviceBuffer[]): void {
  for (const b of buffers) b.dispose();
}

/** Downloads every buffer, all transfers in flight at once. */
export function downloadAll(backend: AbstractBackend, buffers: readonly DeviceBuffer[]): Promise<HostTensor[]> {
  return Promise.all(buffers.map((b) => backend.download(b)));
}

/** sha256 (hex) of each tensor's bytes: outputs are compared across processes and clients by hash. */
export function sha256Each(tensors: readonly HostTensor[]): string[] {
  return tensors.map((t) => new Bun.CryptoHasher("sha256").update(tensorBytes(t)).digest("hex"));
}

/** One sha256 (hex) over every tensor's bytes, in order. */
export function sha256All(tensors: readonly HostTensor[]): string {
  const h = new Bun.CryptoHasher("sha256");
  for (const t of tensors) h.update(tensorBytes(t));
  return h.digest("hex");
}

/** sha256All of one execution's outputs, downloaded; the output buffers are freed. */
export async function runOnceSha256(
  backend: AbstractBackend,
  exe: Executable,
  args: readonly DeviceBuffer[],
): Promise<string> {
  const outs = await backend.execute(exe, args);
  try {
    return sha256All(await downloadAll(backend, outs));
  } finally {
    disposeAll(outs);
  }
}

/**
 * Milliseconds of each of `runs` executions, after `warmup` untimed ones; every output is freed,
 * outside the timed span.
 */
export async function timeExecutions(
  backend: AbstractBackend,
  exe: Executable,
  args: readonly DeviceBuffer[],
  warmup: number,
  runs: number,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) disposeAll(await backend.execute(exe, args));
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const outs = await backend.execute(exe, args);
    times.push(performance.now() - t0);
    disposeAll(outs);
  }
  return times;
}

export interface ByteComparison {
  readonly identical: boolean;
  /** Per output: index of the first differing byte, or -1. */
  readonly firstDiffByte: number[];
  readonly maxAbsDiff: number[];
}

/** Byte-for-byte comparison of two output lists (also the largest absolute difference). */
export function compareOutputs(a: readonly HostTensor[], b: readonly HostTensor[]): ByteComparison {
  if (a.length !== b.length) throw new Error(`output counts differ: ${a.length} vs ${b.length}`);
  const firstDiffByte: number[] = [];
  const maxAbs: number[] = [];
  for (let i = 0; i < a.length; i++) {
    const x = tensorBytes(a[i] as HostTensor);
    const y = tensorBytes(b[i] as HostTensor);
    let diff = x.byteLength === y.byteLength ? -1 : Math.min(x.byteLength, y.byteLength);
    if (diff < 0) {
      for (let k = 0; k < x.byteLength; k++) {
        if (x[k] !== y[k]) {
          diff = k;
          break;
        }
      }
    }
    firstDiffByte.push(diff);
    maxAbs.push(maxAbsDiff(a[i] as HostTensor, b[i] as HostTensor));
  }
  return { identical: firstDiffByte.every((d) => d < 0), firstDiffByte, maxAbsDiff: maxAbs };
}

/** Largest |a - b| over elements (numbers or bigints); NaN where shapes differ. */
export function maxAbsDiff(a: HostTensor, b: HostTensor): number {
  if (a.data.length !== b.data.length) return Number.NaN;
  let m = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = Math.abs(Number(a.data[i]) - Number(b.data[i]));
    if (d > m || Number.isNaN(d)) m = d;
  }
  return m;
}

/** Whether the bundle carries JAX's serialization of a batch size's program (the JAX anchor's input). */
export function hasJaxExported(bundle: Bundle, platform: string, batch: number): boolean {
  return existsSync(join(bundle.dir, `jax_exported.${platform}.b${batch}.bin`));
}

/** compareOutputs' largest differences, or why they cannot be computed (kept in the results as text). */
export function maxAbsDiffOrReason(a: readonly HostTensor[], b: readonly HostTensor[]): number[] | string {
  try {
    return compareOutputs(a, b).maxAbsDiff;
  } catch (err) {
    return String(err instanceof Error ? err.message : err);
  }
}

import type { DType } from "../dtypes.ts";
import type { ModuleFormat } from "../backend.ts";
import type { HostTensor } from "../tensor.ts";

/**
 * A ReactantServer 2.0 bundle as the worker sees it after loading and validation. Shapes are
 * row-major (C order) everywhere in this type; the manifest's column-major letter strings are
 * kept only in `TensorSpec.letters` for display and round-tripping.
 */
export interface Bundle {
  /** Model name: the bundle directory's name (must equal the manifest's `name`). */
  readonly name: string;
  /** Absolute path of the bundle directory. */
  readonly dir: string;
  readonly manifest: Manifest;
  /** Every StableHLO module of the bundle, one per (variant, batch size) program. */
  readonly modules: readonly BundleModule[];
  readonly weights: WeightsFile;
}

export interface Manifest {
  readonly formatVersion: string;
  readonly name: string;
  readonly description: string;
  /** "model" (a StableHLO executable + weights) or "meta" (rejected by xlaserve: no Julia). */
  readonly kind: string;
  readonly executableInputs: readonly TensorSpec[];
  readonly executableOutputs: readonly TensorSpec[];
  /** Present only when the bundle carries a model.jl that transforms the I/O. */
  readonly clientInputs: readonly TensorSpec[] | null;
  readonly clientOutputs: readonly TensorSpec[] | null;
  readonly compiledBatchSizes: readonly number[];
  /**
   * Multi-shape variants (`input_shapes`): variant i gives, per executable input, the fixed
   * sizes of its non-batch axes for model.v{i}[.b{N}].mlir. Empty when the bundle has one shape.
   */
  readonly inputShapeVariants: readonly InputShapeVariant[];
  readonly provenance: Readonly<Record<string, unknown>>;
  /**
   * Row-major 0-based batch axis of the first executable input, or null when inputs are unbatched.
   * Either every executable input is batched or none is; inputs of different rank may put the
   * batch axis elsewhere (ReactantServer's rule), so batchers use each TensorSpec's `batchAxis`.
   */
  readonly inputBatchAxis: number | null;
}

export interface InputShapeVariant {
  readonly index: number;
  /** Input name -> row-major shape with the batch axis as -1. */
  readonly shapes: Readonly<Record<string, readonly number[]>>;
}

export type DimKind = "fixed" | "batch" | "variable";

export interface Dim {
  readonly kind: DimKind;
  /** The size for fixed dims; -1 for batch and variable dims. */
  readonly size: number;
  /** The manifest letter of this axis. */
  readonly letter: string;
}

export interface TensorSpec {
  readonly name: string;
  readonly dtype: DType;
  /** The manifest's letter string as written (column-major order). */
  readonly letters: string;
  /** Row-major dims (the reverse of `letters`). */
  readonly dims: readonly Dim[];
  /** Row-major index of the batch axis, or null when the tensor is not batched. */
  readonly batchAxis: number | null;
}

export interface BundleModule {
  /** File name inside the bundle ("model.b8.mlir"). */
  readonly file: string;
  readonly path: string;
  /** Variant index for model.v{i}[.b{N}].mlir, null otherwise. */
  readonly variant: number | null;
  /** Batch size for model[.v{i}].b{N}.mlir; null for a module that serves every size. */
  readonly batchSize: number | null;
  readonly format: ModuleFormat;
  /** sha256 (hex) of the file's bytes: the program cache's entry name (ARCHITECTURE rule 3). */
  readonly sha256: string;
  readonly byteLength: number;
  /** Reads the module's bytes from disk (modules are not kept in memory). */
  read(): Promise<Uint8Array>;
  /** The @main signature, read from text modules and portable artifacts alike. */
  readonly signature: ModuleSignature | null;
}

export interface ModuleSignature {
  readonly args: readonly SignatureType[];
  readonly results: readonly SignatureType[];
}

export interface SignatureType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export interface WeightsFile {
  readonly path: string;
  /** The call order of the weights (__metadata__.argument_order). */
  readonly argumentOrder: readonly string[];
  readonly tensors: ReadonlyMap<string, WeightEntry>;
  /** Sum of the tensors' byte lengths. */
  readonly totalBytes: number;
  /** sha256 of the file; computed lazily because weights can be large. */
  sha256(): Promise<string>;
  /**
   * A tensor as a view over the memory-mapped file: no copy. The view is valid while the
   * WeightsFile is referenced.
   */
  tensor(name: string): HostTensor;
}

export interface WeightEntry {
  readonly name: string;
  readonly dtype: DType;
  /** Shape as stored in the file (row-major). */
  readonly shape: readonly number[];
  /** Byte range inside the file's data section, relative to the file start. */
  readonly byteOffset: number;
  readonly byteLength: number;
}

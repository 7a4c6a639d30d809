import type { HostTensor } from "@xlaserve/core";
import { XlaserveError, zeros } from "@xlaserve/core";
import type { Bundle, BundleModule, TensorSpec } from "@xlaserve/core/bundle/types.ts";
import type { LoadedProgram, ProgramRecord, ProgramTarget } from "./program-types.ts";

/**
 * A model's programs and the shapes they take: which program serves a (variant, batch size),
 * which variant a request's shapes select, and the rows a request carries.
 */
export class ModelPrograms {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** Ascending. */
  readonly compiledBatchSizes: readonly number[];
  readonly maxBatchSize: number;

  constructor(
    private readonly bundle: Bundle,
    private readonly byModule: ReadonlyMap<BundleModule, LoadedProgram>,
    private readonly label: () => string,
  ) {
    this.inputs = bundle.manifest.executableInputs;
    this.outputs = bundle.manifest.executableOutputs;
    this.compiledBatchSizes = [...bundle.manifest.compiledBatchSizes].sort((a, b) => a - b);
    this.maxBatchSize = Math.max(...this.compiledBatchSizes);
  }

  /** Every input and output has a batch axis, so requests can be joined into one execution. */
  get batchable(): boolean {
    return (
      this.maxBatchSize > 1 &&
      this.inputs.length > 0 &&
      this.inputs.every((s) => s.batchAxis !== null) &&
      this.outputs.every((s) => s.batchAxis !== null)
    );
  }

  records(): ProgramRecord[] {
    return [...this.byModule.entries()].map(([m, p]) => ({
      file: m.file,
      variant: m.variant,
      batchSize: m.batchSize,
      outcome: p.outcome,
      compileMs: p.compileMs,
      loadMs: p.loadMs,
    }));
  }

  loaded(): IterableIterator<LoadedProgram> {
    return this.byModule.values();
  }

  /** Program for a (variant, batch size): the per-size module or the module serving every size. */
  programFor(variant: number | null, batchSize: number): { module: BundleModule; program: LoadedProgram } {
    let fallback: { module: BundleModule; program: LoadedProgram } | undefined;
    for (const [module, program] of this.byModule) {
      if (module.variant !== variant) continue;
      if (module.batchSize === batchSize) return { module, program };
      if (module.batchSize === null) fallback = { module, program };
    }
    if (fallback) return fallback;
    throw new XlaserveError(
      "INTERNAL",
      `model "${this.label()}": no program for variant ${variant}, batch size ${batchSize}`,
    );
  }

  /** Variants as the probe enumerates them. */
  variants(): (number | null)[] {
    const n = this.bundle.manifest.inputShapeVariants.length;
    return n === 0 ? [null] : [...Array(n).keys()];
  }

  get hasVariants(): boolean {
    return this.bundle.manifest.inputShapeVariants.length > 0;
  }

  /** Every (variant, batch size) the probe runs, with the program serving it. */
  targets(): ProgramTarget[] {
    return this.variants().flatMap((variant) =>
      this.compiledBatchSizes.map((batchSize) => ({
        variant,
        batchSize,
        program: this.programFor(variant, batchSize).program,
      })),
    );
  }

  /** Row-major shape of input `index` for a (variant, batch size) program. */
  inputShape(index: number, variant: number | null, batchSize: number): number[] {
    const spec = this.inputs[index];
    if (!spec) throw new XlaserveError("INTERNAL", `no input ${index}`);
    const variantShape =
      variant === null ? undefined : this.bundle.manifest.inputShapeVariants[variant]?.shapes[spec.name];
    return spec.dims.map((d, axis) => {
      if (d.kind === "fixed") return d.size;
      if (d.kind === "batch") return batchSize;
      const v = variantShape?.[axis];
      if (v === undefined || v < 0) throw new XlaserveError("INTERNAL", `input ${spec.name}: axis ${axis} has no size`);
      return v;
    });
  }

  /** Zeros of every input's shape for a (variant, batch size). */
  zeroInputs(variant: number | null, batchSize: number): HostTensor[] {
    return this.inputs.map((spec, i) => zeros(spec.dtype, this.inputShape(i, variant, batchSize)));
  }

  /** The variant whose compiled shapes the request's inputs match. */
  pickVariant(inputs: ReadonlyMap<string, HostTensor>): number | null {
    const variants = this.bundle.manifest.inputShapeVariants;
    if (variants.length === 0) return null;
    for (const variant of variants) {
      const fits = this.inputs.every((spec) => {
        const t = inputs.get(spec.name);
        const want = variant.shapes[spec.name];
        if (!t || !want) return false;
        return want.length === t.shape.length && want.every((d, i) => d === -1 || d === t.shape[i]);
      });
      if (fits) return variant.index;
    }
    const shapes = this.inputs.map((s) => `${s.name} [${inputs.get(s.name)?.shape.join(", ")}]`).join(", ");
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `model "${this.label()}": input shapes ${shapes} match none of its compiled input_shapes variants`,
    );
  }

  /** Rows the request carries along the batch axis (null for a model without one). */
  requestBatch(inputs: ReadonlyMap<string, HostTensor>): number | null {
    for (const spec of this.inputs) {
      if (spec.batchAxis === null) continue;
      const t = inputs.get(spec.name);
      const b = t?.shape[spec.batchAxis];
      if (b !== undefined) return b;
    }
    return null;
  }
}

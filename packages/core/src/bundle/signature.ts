import { type DType, dtypeInfo } from "../dtypes.ts";
import { sameShape } from "../tensor.ts";
import { formatSignatureType } from "./mlir-signature.ts";
import { bundleError } from "./problems.ts";
import type { BundleModule, Dim, Manifest, SignatureType, TensorSpec, WeightsFile } from "./types.ts";

/**
 * Checks a text module's @main against what the worker will pass it: the executable inputs
 * (batch axis = the module's batch size, variable axes = its variant's sizes), then the weights
 * in argument_order, and the results against executable_outputs. A mismatch caught here is a
 * clear load error instead of a failed compile or, worse, a wrong answer.
 */
export function checkModuleSignature(
  bundle: string,
  module: BundleModule,
  manifest: Manifest,
  weights: WeightsFile,
): void {
  const signature = module.signature;
  if (!signature) return;
  const inputs = manifest.executableInputs;
  const order = weights.argumentOrder;
  const fail = (field: string, problem: string, extra: Record<string, unknown> = {}) =>
    bundleError("MODULE_SIGNATURE_MISMATCH", { bundle, file: module.file }, field, problem, extra);

  const expectedArgs = inputs.length + order.length;
  if (signature.args.length !== expectedArgs) {
    throw fail(
      "@main",
      `@main takes ${signature.args.length} arguments but the bundle passes ${expectedArgs} (${inputs.length} executable inputs + ${order.length} weights in argument_order)`,
      { expected: expectedArgs, actual: signature.args.length },
    );
  }
  const variantShapes = module.variant === null ? null : manifest.inputShapeVariants[module.variant]?.shapes;
  inputs.forEach((spec, index) => {
    const actual = signature.args[index] as SignatureType;
    const variantShape = variantShapes?.[spec.name] ?? null;
    const problem = compareToSpec(actual, spec, variantShape, module, manifest);
    if (problem) {
      throw fail(`argument ${index}`, `argument ${index} (executable input "${spec.name}") ${problem}`, {
        argument: index,
        tensor: spec.name,
      });
    }
  });
  order.forEach((name, position) => {
    const index = inputs.length + position;
    const actual = signature.args[index] as SignatureType;
    const entry = weights.tensors.get(name);
    if (!entry) return; // the safetensors reader already guarantees presence
    const reversed = [...entry.shape].reverse();
    const matches =
      actual.dtype === entry.dtype && (sameShape(actual.shape, entry.shape) || sameShape(actual.shape, reversed));
    if (!matches) {
      throw fail(
        `argument ${index}`,
        `argument ${index} (weight "${name}") is ${show(actual)} but weights.safetensors holds ${entry.dtype} [${entry.shape.join(", ")}]`,
        { argument: index, tensor: name },
      );
    }
  });
  const outputs = manifest.executableOutputs;
  if (signature.results.length !== outputs.length) {
    throw fail(
      "results",
      `@main returns ${signature.results.length} results but executable_outputs lists ${outputs.length}`,
      { expected: outputs.length, actual: signature.results.length },
    );
  }
  outputs.forEach((spec, index) => {
    const problem = compareToSpec(signature.results[index] as SignatureType, spec, null, module, manifest);
    if (problem) {
      throw fail(`result ${index}`, `result ${index} (executable output "${spec.name}") ${problem}`, {
        result: index,
        tensor: spec.name,
      });
    }
  });
}

/** Returns why `actual` cannot carry `spec` in this module, or null when it can. */
function compareToSpec(
  actual: SignatureType,
  spec: TensorSpec,
  variantShape: readonly number[] | null,
  module: BundleModule,
  manifest: Manifest,
): string | null {
  const expected = `${spec.dtype} ${describeDims(spec.dims, module, variantShape)}`;
  if (actual.dtype !== spec.dtype || actual.shape.length !== spec.dims.length) {
    return `is ${show(actual)}, expected ${expected}`;
  }
  for (let axis = 0; axis < spec.dims.length; axis++) {
    const dim = spec.dims[axis] as Dim;
    const size = actual.shape[axis] as number;
    if (!dimAccepts(dim, size, variantShape?.[axis], module, manifest)) {
      return `is ${show(actual)}, expected ${expected} (axis ${axis}, "${dim.letter}")`;
    }
  }
  return null;
}

function dimAccepts(dim: Dim, size: number, variantSize: number | undefined, module: BundleModule, manifest: Manifest) {
  switch (dim.kind) {
    case "fixed":
      return size === dim.size;
    case "variable":
      // Inputs of a variant module take the variant's size; outputs may be anything.
      return variantSize === undefined || variantSize === -1 ? true : size === variantSize;
    case "batch": {
      if (module.batchSize !== null) return size === module.batchSize;
      // One module for every size: the batch axis is dynamic, or fixed at a compiled size.
      const sizes = manifest.compiledBatchSizes;
      return size === -1 || sizes.length === 0 || sizes.includes(size);
    }
  }
}

function describeDims(dims: readonly Dim[], module: BundleModule, variantShape: readonly number[] | null): string {
  const parts = dims.map((d, axis) => {
    if (d.kind === "fixed") return String(d.size);
    if (d.kind === "batch") return module.batchSize === null ? `${d.letter}(batch)` : String(module.batchSize);
    const size = variantShape?.[axis];
    return size === undefined || size === -1 ? `${d.letter}(variable)` : String(size);
  });
  return `[${parts.join(", ")}]`;
}

function show(type: SignatureType): string {
  return formatSignatureType(type, dtypeInfo(type.dtype as DType).mlir);
}

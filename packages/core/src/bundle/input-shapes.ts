import { type BundleFileRef, bundleInvalid, describeValue } from "./problems.ts";
import type { InputShapeVariant, TensorSpec } from "./types.ts";

/**
 * Multi-shape bundles (`input_shapes`): one weight set compiled for several concrete input
 * shapes, e.g. a detector at several aspect ratios. Executable inputs mark the varying axes with
 * `-1`; each `input_shapes` entry gives every such letter a size, and variant i is compiled as
 * model.v{i}[.b{N}].mlir.
 */
export function parseInputShapes(
  raw: unknown,
  inputs: readonly TensorSpec[],
  where: BundleFileRef,
): InputShapeVariant[] {
  const variableLetters = new Set<string>();
  for (const input of inputs) {
    for (const dim of input.dims) if (dim.kind === "variable") variableLetters.add(dim.letter);
  }
  if (raw === undefined) {
    if (variableLetters.size > 0) {
      throw bundleInvalid(
        where,
        "input_shapes",
        `executable inputs have variable axes (${[...variableLetters].join(", ")} = -1) but no input_shapes lists the compiled sizes`,
      );
    }
    return [];
  }
  if (!Array.isArray(raw)) {
    throw bundleInvalid(
      where,
      "input_shapes",
      `must be a list of {letter: size} mappings, found ${describeValue(raw)}`,
    );
  }
  if (variableLetters.size === 0) {
    throw bundleInvalid(
      where,
      "input_shapes",
      "is declared but no executable input has a variable axis (-1 in its dims)",
    );
  }
  const seen = new Map<string, number>();
  return raw.map((entry, index) => {
    const sizes = parseVariantSizes(entry, `input_shapes[${index}]`, variableLetters, where);
    const key = [...variableLetters].map((l) => sizes.get(l)).join(",");
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw bundleInvalid(where, `input_shapes[${index}]`, `repeats input_shapes[${earlier}]`);
    }
    seen.set(key, index);
    const shapes: Record<string, number[]> = {};
    for (const input of inputs) {
      shapes[input.name] = input.dims.map((d) =>
        d.kind === "fixed" ? d.size : d.kind === "batch" ? -1 : (sizes.get(d.letter) as number),
      );
    }
    return { index, shapes };
  });
}

function parseVariantSizes(
  raw: unknown,
  field: string,
  variableLetters: ReadonlySet<string>,
  where: BundleFileRef,
): Map<string, number> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(where, field, `must be a mapping of axis letters to sizes, found ${describeValue(raw)}`);
  }
  const sizes = new Map<string, number>();
  for (const [letter, size] of Object.entries(raw)) {
    if (!/^[A-Za-z]$/.test(letter)) {
      throw bundleInvalid(where, `${field}.${letter}`, `key "${letter}" is not a single ASCII letter`);
    }
    if (!variableLetters.has(letter)) {
      throw bundleInvalid(where, `${field}.${letter}`, `"${letter}" is not a variable axis of any executable input`);
    }
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size <= 0) {
      throw bundleInvalid(where, `${field}.${letter}`, `size must be a positive integer, found ${describeValue(size)}`);
    }
    sizes.set(letter, size);
  }
  for (const letter of variableLetters) {
    if (!sizes.has(letter)) throw bundleInvalid(where, field, `gives no size for the variable axis "${letter}"`);
  }
  return sizes;
}

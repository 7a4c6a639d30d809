import { dtypeInfo } from "../dtypes.ts";
import { parseInputShapes } from "./input-shapes.ts";
import { parseTensorSpec } from "./letter-shape.ts";
import { type BundleFileRef, bundleError, bundleInvalid, describeValue } from "./problems.ts";
import type { Manifest, TensorSpec } from "./types.ts";

/**
 * manifest.yaml of ReactantServer bundle format 2.0, with every rule of ReactantServer's
 * manifest.jl (structure, letter shapes, unique names, batchability, batch sizes, client_* only
 * with a model.jl, KServe-representable client dtypes, input_shapes variants).
 */

export const MANIFEST_FILE = "manifest.yaml";
const SUPPORTED_FORMAT_VERSIONS = ["2.0", "2"];

export interface ManifestContext {
  /** The bundle directory's name: the manifest's `name` must equal it. */
  readonly bundle: string;
  /** Whether the bundle carries a model.jl (the only case client_inputs/outputs are allowed). */
  readonly hasModelJl: boolean;
}

/** Parses YAML text; a syntax error becomes BUNDLE_INVALID naming the file. */
export function parseManifestYaml(text: string, context: ManifestContext): Manifest {
  let raw: unknown;
  try {
    raw = Bun.YAML.parse(text);
  } catch (cause) {
    throw bundleInvalid(where(context), "", `is not valid YAML (${(cause as Error).message})`);
  }
  return parseManifest(raw, context);
}

export function parseManifest(raw: unknown, context: ManifestContext): Manifest {
  const at = where(context);
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(at, "", `must be a mapping at the top level, found ${describeValue(raw)}`);
  }
  const doc = raw as Record<string, unknown>;

  const formatVersion = readFormatVersion(doc.format_version, at);
  const name = doc.name;
  if (typeof name !== "string") throw bundleInvalid(at, "name", `must be a string, found ${describeValue(name)}`);
  if (name !== context.bundle) {
    throw bundleInvalid(at, "name", `name "${name}" does not match the bundle directory name "${context.bundle}"`);
  }
  const kind = doc.kind ?? "model";
  if (kind === "meta") {
    throw bundleError(
      "UNSUPPORTED",
      at,
      "kind",
      "kind: meta bundles are Julia workflows (model.jl calling other models) and need ReactantServer; xlaserve serves kind: model",
    );
  }
  if (kind !== "model")
    throw bundleInvalid(at, "kind", `unsupported kind ${describeValue(kind)}; supported: model, meta`);

  const executableInputs = readTensorList(doc, "executable_inputs", true, at) as TensorSpec[];
  const executableOutputs = readTensorList(doc, "executable_outputs", true, at) as TensorSpec[];
  const clientInputs = readTensorList(doc, "client_inputs", false, at);
  const clientOutputs = readTensorList(doc, "client_outputs", false, at);
  if (!context.hasModelJl) {
    const offending = clientInputs ? "client_inputs" : clientOutputs ? "client_outputs" : null;
    if (offending) {
      throw bundleInvalid(
        at,
        offending,
        "client_inputs/client_outputs are only allowed when the bundle has a model.jl",
      );
    }
  }
  checkClientDtypes("client_inputs", clientInputs ?? executableInputs, clientInputs === null, at);
  checkClientDtypes("client_outputs", clientOutputs ?? executableOutputs, clientOutputs === null, at);

  const inputBatchAxis = checkBatchability(executableInputs, at);
  const compiledBatchSizes = readBatchSizes(doc.batching, at);
  const inputShapeVariants = parseInputShapes(doc.input_shapes, executableInputs, at);

  return {
    formatVersion,
    name,
    description: readDescription(doc.description, at),
    kind: "model",
    executableInputs,
    executableOutputs,
    clientInputs,
    clientOutputs,
    compiledBatchSizes,
    inputShapeVariants,
    provenance: readProvenance(doc.provenance, at),
    inputBatchAxis,
  };
}

function where(context: ManifestContext): BundleFileRef {
  return { bundle: context.bundle, file: MANIFEST_FILE };
}

function readFormatVersion(raw: unknown, at: BundleFileRef): string {
  if (raw === undefined || raw === null) throw bundleInvalid(at, "format_version", "is missing");
  // An unquoted `2.0` parses as the number 2; ReactantServer accepts both spellings.
  if (typeof raw !== "string" && typeof raw !== "number") {
    throw bundleInvalid(at, "format_version", `must be a string, found ${describeValue(raw)}`);
  }
  const version = String(raw);
  if (!SUPPORTED_FORMAT_VERSIONS.includes(version)) {
    throw bundleInvalid(
      at,
      "format_version",
      `unsupported format_version "${version}"; supported: ${SUPPORTED_FORMAT_VERSIONS.join(", ")}`,
    );
  }
  return version;
}

function readDescription(raw: unknown, at: BundleFileRef): string {
  if (raw === undefined || raw === null) return "";
  if (typeof raw === "object") throw bundleInvalid(at, "description", `must be text, found ${describeValue(raw)}`);
  return String(raw);
}

function readProvenance(raw: unknown, at: BundleFileRef): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(at, "provenance", `must be a mapping, found ${describeValue(raw)}`);
  }
  return raw as Record<string, unknown>;
}

function readTensorList(
  doc: Record<string, unknown>,
  section: string,
  required: boolean,
  at: BundleFileRef,
): TensorSpec[] | null {
  const raw = doc[section];
  if (raw === undefined) {
    if (required) throw bundleInvalid(at, section, "is missing");
    return null;
  }
  if (!Array.isArray(raw)) throw bundleInvalid(at, section, `must be a list of tensors, found ${describeValue(raw)}`);
  const specs = raw.map((entry, i) => parseTensorSpec(entry, `${section}[${i}]`, at));
  const seen = new Map<string, number>();
  specs.forEach((spec, i) => {
    const first = seen.get(spec.name);
    if (first !== undefined) {
      throw bundleInvalid(
        at,
        `${section}[${i}].name`,
        `duplicate tensor name "${spec.name}" (also ${section}[${first}])`,
      );
    }
    seen.set(spec.name, i);
  });
  return specs;
}

/**
 * KServe v2 can only describe dtypes it has a wire name for, so client-facing tensors may not be
 * f8. Without client_* sections the executable specs are what clients see.
 */
function checkClientDtypes(section: string, specs: readonly TensorSpec[], fromExecutable: boolean, at: BundleFileRef) {
  const shownAs = fromExecutable ? section.replace("client_", "executable_") : section;
  specs.forEach((spec, i) => {
    if (!dtypeInfo(spec.dtype).clientVisible) {
      throw bundleInvalid(
        at,
        `${shownAs}[${i}].dtype`,
        `client-facing tensor "${spec.name}" has dtype ${spec.dtype}, which has no KServe datatype (f8 is executable-only)`,
      );
    }
  });
}

/**
 * All-or-nothing batchability (ReactantServer's current rule): the batcher concatenates every
 * input along its own batch axis, so one unbatched input among batched ones would be silently
 * broadcast from the first request. Inputs of different rank may put the batch axis at different
 * positions; the manifest's `inputBatchAxis` is that of the first input.
 */
function checkBatchability(inputs: readonly TensorSpec[], at: BundleFileRef): number | null {
  const batched = inputs.filter((t) => t.batchAxis !== null);
  if (batched.length > 0 && batched.length < inputs.length) {
    const unbatched = inputs.filter((t) => t.batchAxis === null).map((t) => `"${t.name}"`);
    throw bundleInvalid(
      at,
      "executable_inputs",
      `mixes batched and unbatched inputs: every executable input needs a batch axis (n/b) or none may; unbatched: ${unbatched.join(", ")}`,
    );
  }
  return batched[0]?.batchAxis ?? null;
}

function readBatchSizes(raw: unknown, at: BundleFileRef): number[] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(at, "batching", `must be a mapping, found ${describeValue(raw)}`);
  }
  const sizes = (raw as Record<string, unknown>).compiled_batch_sizes;
  const field = "batching.compiled_batch_sizes";
  if (sizes === undefined || sizes === null) return [];
  if (!Array.isArray(sizes)) throw bundleInvalid(at, field, `must be a list, found ${describeValue(sizes)}`);
  const seen = new Set<number>();
  sizes.forEach((size, i) => {
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size <= 0) {
      throw bundleInvalid(at, `${field}[${i}]`, `batch sizes must be positive integers, found ${describeValue(size)}`);
    }
    if (seen.has(size)) throw bundleInvalid(at, `${field}[${i}]`, `batch size ${size} is listed twice`);
    seen.add(size);
  });
  return sizes as number[];
}

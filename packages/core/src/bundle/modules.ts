import { readdirSync } from "node:fs";
import { join } from "node:path";
import { detectModuleFormat } from "../backend.ts";
import { isModuleError } from "@xlaserve/stablehlo/errors.ts";
import { SignatureSyntaxError, parseMainSignature, portableMainSignature } from "./mlir-signature.ts";
import { type BundleFileRef, bundleError, bundleInvalid } from "./problems.ts";
import type { BundleModule, Manifest, ModuleSignature } from "./types.ts";

/**
 * Finds a bundle's StableHLO modules: model.mlir (one module for every batch size),
 * model.b{N}.mlir (one per compiled size), and for multi-shape bundles model.v{i}.mlir /
 * model.v{i}.b{N}.mlir. Every compiled (variant, size) must have exactly one module, and a file
 * for a size or variant the manifest does not declare is an error rather than silently unused.
 */

/** Any module file name of the format; digits without leading zeros so names are canonical. */
const MODULE_NAME = /^model(?:\.v(0|[1-9]\d*))?(?:\.b([1-9]\d*))?\.mlir$/;

export interface ModuleFileName {
  readonly file: string;
  readonly variant: number | null;
  readonly batchSize: number | null;
}

export function parseModuleFileName(file: string): ModuleFileName | null {
  const match = MODULE_NAME.exec(file);
  if (!match) return null;
  return {
    file,
    variant: match[1] === undefined ? null : Number(match[1]),
    batchSize: match[2] === undefined ? null : Number(match[2]),
  };
}

/** Picks the module files a manifest needs from a directory listing, or throws BUNDLE_INVALID. */
export function selectModuleFiles(files: readonly string[], manifest: Manifest, bundle: string): ModuleFileName[] {
  const found = files.map(parseModuleFileName).filter((m): m is ModuleFileName => m !== null);
  const variantCount = manifest.inputShapeVariants.length;
  const sizes = manifest.compiledBatchSizes;
  for (const module of found) {
    const at: BundleFileRef = { bundle, file: module.file };
    if (variantCount === 0 && module.variant !== null) {
      throw bundleInvalid(at, "input_shapes", "is a variant module but the manifest declares no input_shapes");
    }
    if (variantCount > 0 && module.variant === null) {
      throw bundleInvalid(
        at,
        "input_shapes",
        `the manifest declares ${variantCount} input_shapes variants, so modules must be named model.v{i}[.b{N}].mlir`,
      );
    }
    if (module.variant !== null && module.variant >= variantCount) {
      throw bundleInvalid(
        at,
        "input_shapes",
        `variant ${module.variant} is not declared (input_shapes has ${variantCount} entries)`,
      );
    }
    if (module.batchSize !== null && !sizes.includes(module.batchSize)) {
      throw bundleInvalid(
        at,
        "batching.compiled_batch_sizes",
        `batch size ${module.batchSize} is not a compiled batch size [${sizes.join(", ")}]`,
      );
    }
  }
  const variants: (number | null)[] = variantCount === 0 ? [null] : [...Array(variantCount).keys()];
  return variants.flatMap((variant) => selectForVariant(found, variant, sizes, bundle));
}

function selectForVariant(
  found: readonly ModuleFileName[],
  variant: number | null,
  sizes: readonly number[],
  bundle: string,
): ModuleFileName[] {
  const stem = variant === null ? "model" : `model.v${variant}`;
  const mine = found.filter((m) => m.variant === variant);
  const single = mine.find((m) => m.batchSize === null);
  const perSize = mine.filter((m) => m.batchSize !== null);
  if (single && perSize.length > 0) {
    throw bundleInvalid(
      { bundle, file: single.file },
      "",
      `is ambiguous next to ${perSize.map((m) => m.file).join(", ")}: use one module for all sizes or one per size, not both`,
    );
  }
  if (single) return [single];
  if (perSize.length === 0) {
    const expected = [`${stem}.mlir`, ...sizes.map((n) => `${stem}.b${n}.mlir`)].join(" or ");
    throw bundleInvalid({ bundle, file: `${stem}.mlir` }, "", `no StableHLO module: expected ${expected}`);
  }
  return sizes.map((size) => {
    const module = perSize.find((m) => m.batchSize === size);
    if (!module) {
      throw bundleInvalid(
        { bundle, file: `${stem}.b${size}.mlir` },
        "batching.compiled_batch_sizes",
        `compiled batch size ${size} has no module (${stem}.b${size}.mlir is missing)`,
      );
    }
    return module;
  });
}

/** Reads, fingerprints and parses the @main signature of each selected module (text or bytecode). */
export async function loadModules(dir: string, manifest: Manifest, bundle: string): Promise<BundleModule[]> {
  const files = selectModuleFiles(readdirSync(dir), manifest, bundle);
  return Promise.all(files.map((name) => loadModule(dir, name, bundle)));
}

async function loadModule(dir: string, name: ModuleFileName, bundle: string): Promise<BundleModule> {
  const path = join(dir, name.file);
  const bytes = await Bun.file(path).bytes();
  const format = detectModuleFormat(bytes);
  const signature = moduleSignature(bytes, { bundle, file: name.file });
  return {
    file: name.file,
    path,
    variant: name.variant,
    batchSize: name.batchSize,
    format,
    sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"),
    byteLength: bytes.byteLength,
    read: () => Bun.file(path).bytes(),
    signature,
  };
}

/**
 * The @main signature of a module file, text or portable artifact. Errors are BUNDLE_INVALID
 * (an unreadable artifact: file, offset, what was expected) or MODULE_INVALID (no readable @main).
 */
export function moduleSignature(bytes: Uint8Array, at: BundleFileRef): ModuleSignature {
  return detectModuleFormat(bytes) === "text" ? readSignature(bytes, at) : readPortableSignature(bytes, at);
}

function readSignature(bytes: Uint8Array, at: BundleFileRef): ModuleSignature {
  try {
    return parseMainSignature(new TextDecoder().decode(bytes));
  } catch (cause) {
    if (!(cause instanceof SignatureSyntaxError)) throw cause;
    throw bundleError("MODULE_INVALID", at, "@main", `cannot read the @main signature: ${cause.message}`);
  }
}

/** A portable artifact is decoded whole: newer, truncated or corrupt ones are BUNDLE_INVALID here. */
function readPortableSignature(bytes: Uint8Array, at: BundleFileRef): ModuleSignature {
  try {
    return portableMainSignature(bytes, at.file);
  } catch (cause) {
    if (cause instanceof SignatureSyntaxError) {
      throw bundleError("MODULE_INVALID", at, "@main", `cannot read the @main signature: ${cause.message}`);
    }
    if (!isModuleError(cause)) throw cause;
    const { offset, expected } = cause.details;
    throw bundleError(
      "BUNDLE_INVALID",
      at,
      "",
      `is not a readable StableHLO portable artifact: ${cause.message.replace(`${at.file}: `, "")}`,
      { offset, expected },
    );
  }
}

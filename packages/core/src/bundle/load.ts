import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve } from "node:path";
import { XlaserveError } from "../errors.ts";
import { MANIFEST_FILE, parseManifestYaml } from "./manifest.ts";
import { loadModules } from "./modules.ts";
import { bundleError, bundleInvalid } from "./problems.ts";
import { type VerifiedFiles, readSafetensors } from "./safetensors.ts";
import { checkModuleSignature } from "./signature.ts";
import type { Bundle } from "./types.ts";

export const WEIGHTS_FILE = "weights.safetensors";
export const MODEL_JL_FILE = "model.jl";

/**
 * Loads and validates one bundle directory: manifest, modules (hashed, signatures read), weights
 * (read into memory, header checked against the bytes, sha256 checked against the manifest's
 * provenance.weights_sha256 where it has one) and every module's @main against both. Nothing is
 * compiled.
 */
export async function loadBundle(dir: string, options: LoadBundleOptions = {}): Promise<Bundle> {
  const absolute = resolve(dir);
  const name = basename(absolute);
  try {
    return await loadValidated(absolute, name, options);
  } catch (cause) {
    if (cause instanceof XlaserveError) throw cause;
    // File-system surprises (permissions, a directory where a file belongs, a file vanishing
    // mid-load) still name the bundle instead of escaping as a bare Node error.
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new XlaserveError(
      "BUNDLE_INVALID",
      `bundle "${name}": cannot be read: ${message}`,
      { bundle: name, file: "", field: "" },
      { cause },
    );
  }
}

export interface LoadBundleOptions {
  /**
   * The model repository the bundle belongs to: a bundle folder whose real path (symbolic links
   * followed) is outside it is refused unless `followLinksOutside`, since the worker would write
   * its .cache/ wherever the link points.
   */
  readonly repository?: string;
  readonly followLinksOutside?: boolean;
  /**
   * Weights files already checked against their manifest's weights_sha256 (by device, inode, size
   * and mtime): a restart or reload of unchanged weights skips hashing them again.
   */
  readonly verifiedWeights?: VerifiedFiles;
}

async function loadValidated(absolute: string, name: string, options: LoadBundleOptions): Promise<Bundle> {
  if (!isDirectory(absolute)) {
    throw new XlaserveError("BUNDLE_NOT_FOUND", `bundle "${name}": ${absolute} is not a directory`, {
      bundle: name,
      file: "",
      field: "",
    });
  }
  if (options.repository !== undefined && !options.followLinksOutside) checkInside(absolute, name, options.repository);
  const manifestPath = join(absolute, MANIFEST_FILE);
  if (!existsSync(manifestPath)) {
    throw new XlaserveError("BUNDLE_NOT_FOUND", `bundle "${name}": no ${MANIFEST_FILE} in ${absolute}`, {
      bundle: name,
      file: MANIFEST_FILE,
      field: "",
    });
  }
  const hasModelJl = existsSync(join(absolute, MODEL_JL_FILE));
  const manifest = parseManifestYaml(await Bun.file(manifestPath).text(), { bundle: name, hasModelJl });
  if (hasModelJl) {
    // The hooks are Julia; serving the executable without them would return untransformed answers.
    throw bundleError(
      "UNSUPPORTED",
      { bundle: name, file: MODEL_JL_FILE },
      "",
      "model.jl pre/post-processing hooks need ReactantServer (Julia); xlaserve serves bundles without model.jl",
    );
  }
  const weightsPath = join(absolute, WEIGHTS_FILE);
  if (!existsSync(weightsPath)) {
    throw bundleInvalid({ bundle: name, file: WEIGHTS_FILE }, "", "is missing");
  }
  const modules = await loadModules(absolute, manifest, name);
  const expected = manifest.provenance.weights_sha256;
  const weights = await readSafetensors(weightsPath, {
    bundle: name,
    requireArgumentOrder: true,
    ...(typeof expected === "string" ? { expectSha256: expected } : {}),
    ...(options.verifiedWeights ? { verified: options.verifiedWeights } : {}),
  });
  for (const module of modules) checkModuleSignature(name, module, manifest, weights);
  return { name, dir: absolute, manifest, modules, weights };
}

export interface BundleLocation {
  readonly name: string;
  readonly dir: string;
}

/**
 * Bundles of a model repository: each immediate subdirectory holding a manifest.yaml, by name.
 * Hidden directories (".cache", ".state", editor folders) are never bundles.
 */
export function discoverBundles(repositoryDir: string): BundleLocation[] {
  const root = resolve(repositoryDir);
  if (!isDirectory(root)) {
    throw new XlaserveError("BUNDLE_NOT_FOUND", `model repository ${root} is not a directory`, { repository: root });
  }
  return readdirSync(root)
    .filter((entry) => !entry.startsWith("."))
    .map((entry) => ({ name: entry, dir: join(root, entry) }))
    .filter((b) => isDirectory(b.dir) && existsSync(join(b.dir, MANIFEST_FILE)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function checkInside(dir: string, name: string, repository: string): void {
  const real = realpathSync(dir);
  const root = realpathSync(resolve(repository));
  const rel = relative(root, real);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new XlaserveError(
      "BUNDLE_INVALID",
      `bundle "${name}": ${dir} links to ${real}, outside the model repository ${root}; set repository.followLinksOutside to serve it (its .cache/ is then written there)`,
      { bundle: name, file: "", field: "", target: real },
    );
  }
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

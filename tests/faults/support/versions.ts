import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { copyBundle, scaleWeights } from "../../e2e/helpers.ts";

/** One version of the MLP bundle's two files a new export changes. */
export interface BundleVersion {
  readonly weights: Uint8Array;
  readonly manifest: string;
}

/** V0: the example as shipped; V1: its biases x5 (another export, with its own weights_sha256). */
export function mlpVersions(scratch: string): BundleVersion[] {
  const v1 = join(scratch, "mlp-v1");
  copyBundle("mlp", v1);
  const v0 = { weights: read(join(v1, "weights.safetensors")), manifest: text(join(v1, "manifest.yaml")) };
  scaleWeights(v1, 5);
  return [v0, { weights: read(join(v1, "weights.safetensors")), manifest: text(join(v1, "manifest.yaml")) }];
}

const read = (p: string) => new Uint8Array(readFileSync(p));
const text = (p: string) => readFileSync(p, "utf8");

function atomic(path: string, data: Uint8Array | string): void {
  writeFileSync(`${path}.tmp-faults`, data);
  renameSync(`${path}.tmp-faults`, path);
}

/** An exporter's write: the manifest and the weights each renamed into place. */
export function installVersion(dir: string, v: BundleVersion): void {
  atomic(join(dir, "manifest.yaml"), v.manifest);
  atomic(join(dir, "weights.safetensors"), v.weights);
}

/** cp over the live files: each truncated, then written, in place. */
export function copyOverVersion(dir: string, v: BundleVersion, upTo = v.weights.length): void {
  atomic(join(dir, "manifest.yaml"), v.manifest);
  writeFileSync(join(dir, "weights.safetensors"), v.weights.subarray(0, upTo));
}

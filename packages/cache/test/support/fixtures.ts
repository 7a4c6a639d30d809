import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { detectModuleFormat } from "@xlaserve/core";
import type { BundleWithModules, CacheModule } from "../../src/types.ts";

export function tempDir(prefix = "xlaserve-cache-"): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

export function moduleFromFile(dir: string, file: string): CacheModule {
  const path = join(dir, file);
  const bytes = readFileSync(path);
  return {
    file,
    sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"),
    format: detectModuleFormat(bytes),
    read: async () => new Uint8Array(readFileSync(path)),
  };
}

/**
 * A bundle directory with two module files and a weights file, read back the way the loader
 * would (hashes from the files' bytes). Only what the cache needs: it never parses modules.
 */
export function writeBundle(repo: string, name: string, modules: Record<string, string>): BundleWithModules {
  const dir = join(repo, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(modules)) writeFileSync(join(dir, file), text);
  writeFileSync(join(dir, "weights.safetensors"), "weights v1");
  return reloadBundle(dir, name, Object.keys(modules));
}

export function reloadBundle(dir: string, name: string, files: readonly string[]): BundleWithModules {
  return { name, dir, modules: files.map((f) => moduleFromFile(dir, f)) };
}

export const MODULES = {
  "model.b1.mlir": "module @b1 { func.func @main(%a: tensor<1xf32>) -> tensor<1xf32> { return %a : tensor<1xf32> } }\n",
  "model.b8.mlir": "module @b8 { func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> { return %a : tensor<8xf32> } }\n",
};

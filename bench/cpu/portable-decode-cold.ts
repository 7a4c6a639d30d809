/**
 * One first load in this fresh process (for portable-decode.bench.ts): the bundle loader's
 * signature check, then the CPU engine's compile of a module file, with none of the reading or
 * planning code run before. Prints `first-load-ms <ms>`.
 *
 *   bun bench/cpu/portable-decode-cold.ts MODULE_FILE
 */
import { readFileSync } from "node:fs";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { detectModuleFormat } from "@xlaserve/core";
import { moduleSignature } from "@xlaserve/core/bundle/modules.ts";

const file = process.argv[2];
if (!file) {
  console.error("usage: bun bench/cpu/portable-decode-cold.ts MODULE_FILE");
  process.exit(2);
}
const bytes = new Uint8Array(readFileSync(file));
const backend = createReactantBackend();
const started = performance.now();
moduleSignature(bytes, { bundle: "bench", file: "model.mlir" });
const exe = await backend.compile({ bytes, format: detectModuleFormat(bytes), origin: "model.mlir" }, {});
const ms = performance.now() - started;
exe.dispose();
await backend.dispose();
console.log(`first-load-ms ${ms}`);

/**
 * One fresh process for bench/gpu/first-result.bench.ts.
 *
 *   bun bench/gpu/first-result-child.ts first   <plugin.so> <bundle dir> <program.pjrt>
 *   bun bench/gpu/first-result-child.ts prepare <plugin.so> <bundle dir> <program.pjrt>
 *
 * first: load the plugin, deserialize the serialized batch-1 program, open the bundle (weights
 * memory-mapped), upload weights and the reference input, run once, download the outputs, and
 * print one JSON line ({inProcessMs}: performance.now(), which counts from this process's start).
 * prepare: compile the batch-1 module and write its serialization (what the cache would hold).
 */
import { writeFileSync } from "node:fs";
import { loadBundle, tensorBytes } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { downloadAll, inputsFor, moduleFor, uploadAll, uploadWeights } from "../lib/bundle-io.ts";

const [mode, pluginPath, bundleDir, programPath] = process.argv.slice(2);
if (!mode || !pluginPath || !bundleDir || !programPath || !["first", "prepare"].includes(mode)) {
  console.error("usage: bun bench/gpu/first-result-child.ts first|prepare <plugin.so> <bundle dir> <program.pjrt>");
  process.exit(2);
}

const backend = createPjrtBackend({ pluginPath, isolateCompile: false });
const bundle = await loadBundle(bundleDir);
const module = moduleFor(bundle, 1);
if (mode === "prepare") {
  const exe = await backend.compile({ bytes: await module.read(), format: module.format }, {});
  writeFileSync(programPath, await backend.serialize(exe));
  console.log(JSON.stringify({ prepared: programPath }));
} else {
  const bytes = new Uint8Array(await Bun.file(programPath).arrayBuffer());
  const exe = await backend.deserialize(bytes, {});
  const weights = await uploadWeights(backend, bundle);
  const inputs = await uploadAll(backend, inputsFor(bundle, module, 1).tensors);
  const outs = await backend.execute(exe, [...inputs, ...weights]);
  const host = await downloadAll(backend, outs);
  const inProcessMs = performance.now();
  const outputsSha256 = host.map((h) => new Bun.CryptoHasher("sha256").update(tensorBytes(h)).digest("hex"));
  console.log(JSON.stringify({ mode: "first-result", inProcessMs, outputsSha256 }));
}
await backend.dispose();

/**
 * One fresh process for bench/gpu/first-result.bench.ts.
 *
 *   bun bench/gpu/first-result-child.ts first   <plugin.so> <bundle dir> <program.pjrt>
 *   bun bench/gpu/first-result-child.ts prepare <plugin.so> <bundle dir> <program.pjrt>
 *
 * first: load the plugin, open the bundle (weights memory-mapped), start every weight upload,
 * deserialize the serialized batch-1 program while the copies run, upload the reference input,
 * run once, download the outputs, and print one JSON line: {inProcessMs} (performance.now(),
 * which counts from this process's start) and {phases} (the end of each step, same clock).
 * prepare: compile the batch-1 module and write its serialization (what the cache would hold).
 */
import { writeFileSync } from "node:fs";
import { loadBundle, uploadAll } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { compileSerialized, downloadAll, inputsFor, moduleFor, sha256Each, uploadWeights } from "../lib/bundle-io.ts";

const phases: Record<string, number> = { imported: performance.now() };
const mark = (name: string) => {
  phases[name] = Math.round(performance.now() * 1000) / 1000;
};

const [mode, pluginPath, bundleDir, programPath] = process.argv.slice(2);
if (!mode || !pluginPath || !bundleDir || !programPath || !["first", "prepare"].includes(mode)) {
  console.error("usage: bun bench/gpu/first-result-child.ts first|prepare <plugin.so> <bundle dir> <program.pjrt>");
  process.exit(2);
}

const backend = createPjrtBackend({ pluginPath, isolateCompile: false });
mark("backend");
const bundle = await loadBundle(bundleDir);
const module = moduleFor(bundle, 1);
mark("bundleOpened");
if (mode === "prepare") {
  writeFileSync(programPath, await compileSerialized(backend, module));
  console.log(JSON.stringify({ prepared: programPath }));
} else {
  const bytes = new Uint8Array(await Bun.file(programPath).arrayBuffer());
  mark("programRead");
  // The copies run on the plugin's transfer threads while deserialize-and-load runs on this one.
  const weightsInFlight = uploadWeights(backend, bundle);
  mark("weightsIssued");
  const exe = await backend.deserialize(bytes, {});
  mark("deserialized");
  const weights = await weightsInFlight;
  mark("weightsUploaded");
  const inputs = await uploadAll(backend, inputsFor(bundle, module, 1).tensors);
  mark("inputsUploaded");
  const outs = await backend.execute(exe, [...inputs, ...weights]);
  mark("executed");
  const host = await downloadAll(backend, outs);
  mark("downloaded");
  const inProcessMs = performance.now();
  const outputsSha256 = sha256Each(host);
  console.log(
    JSON.stringify({ mode: "first-result", inProcessMs, phases, pluginStartupMs: backend.startupMs, outputsSha256 }),
  );
}
await backend.dispose();

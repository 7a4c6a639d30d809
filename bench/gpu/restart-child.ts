/**
 * One fresh process for bench/gpu/pjrt-restart.bench.ts: what a worker restarting from its
 * program cache does with one program, timed.
 *
 *   bun bench/gpu/restart-child.ts <plugin.so> <bundle dir> <batch> <program.pjrt> [loads] [runs] [prime.pjrt]
 *
 * With prime.pjrt, that (small) program is loaded first and timed on its own: the first
 * deserialize-and-load of a process also pays the plugin's one-time set-up, which this separates
 * from the program's own load time. runs = 0 skips the latency part.
 * Deserialize-and-load `loads` times (the first is the restart's figure: nothing compiled in this
 * process), upload weights and the reference input, run once for the outputs' hashes, then time
 * `runs` executions (after 10 untimed) exactly as the worker executes: backend.execute, outputs
 * freed. Prints one JSON line.
 *
 * runs = "serve": after the outputs' hashes, answers commands on stdin, one JSON line each, so the
 * parent can alternate this process with JAX's in short blocks: "run N" times N executions (after
 * 2 untimed ones: the GPU was just running the other process's work), "quit" ends.
 */
import { loadBundle, uploadAll } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import {
  disposeAll,
  downloadAll,
  inputsFor,
  moduleFor,
  sha256Each,
  timeExecutions,
  uploadWeights,
} from "../lib/bundle-io.ts";
import { currentCpu } from "../lib/current-cpu.ts";

const [pluginPath, bundleDir, batchArg, programPath, loadsArg, runsArg, primePath] = process.argv.slice(2);
if (!pluginPath || !bundleDir || !batchArg || !programPath) {
  console.error("usage: bun bench/gpu/restart-child.ts <plugin.so> <bundle dir> <batch> <program.pjrt> [loads] [runs]");
  process.exit(2);
}
const batch = Number(batchArg);
const loads = Math.max(1, Number(loadsArg ?? 5));
const serve = runsArg === "serve";
const runs = serve ? 0 : Math.max(0, Number(runsArg ?? 200));
const backend = createPjrtBackend({ pluginPath, isolateCompile: false });
const bundle = await loadBundle(bundleDir);
const bytes = new Uint8Array(await Bun.file(programPath).arrayBuffer());
let primeLoadMs: number | null = null;
if (primePath) {
  const primeBytes = new Uint8Array(await Bun.file(primePath).arrayBuffer());
  const t0 = performance.now();
  (await backend.deserialize(primeBytes, {})).dispose();
  primeLoadMs = Math.round((performance.now() - t0) * 1000) / 1000;
}
const loadsMs: number[] = [];
let exe = null;
for (let i = 0; i < loads; i++) {
  const t0 = performance.now();
  const loaded = await backend.deserialize(bytes, {});
  loadsMs.push(Math.round((performance.now() - t0) * 1000) / 1000);
  exe?.dispose();
  exe = loaded;
}
if (!exe) throw new Error("no load ran");
if (runs === 0 && !serve) {
  console.log(JSON.stringify({ primeLoadMs, loadsMs, startupMs: backend.startupMs }));
  exe.dispose();
  await backend.dispose();
  process.exit(0);
}
const weights = await uploadWeights(backend, bundle);
const inputs = await uploadAll(backend, inputsFor(bundle, moduleFor(bundle, batch), batch).tensors);
const args = [...inputs, ...weights];
const outs = await backend.execute(exe, args);
const host = await downloadAll(backend, outs);
disposeAll(outs);
const outputsSha256 = sha256Each(host);
if (serve) {
  for (let i = 0; i < 10; i++) disposeAll(await backend.execute(exe, args));
  console.log(JSON.stringify({ ready: true, primeLoadMs, loadsMs, outputsSha256, startupMs: backend.startupMs }));
  for await (const line of console) {
    const [command, count] = line.trim().split(/\s+/);
    if (command === "quit") break;
    if (command !== "run") {
      console.log(JSON.stringify({ error: `unknown command ${JSON.stringify(line)}` }));
      continue;
    }
    const latencyMs = await timeExecutions(backend, exe, args, 2, Number(count));
    console.log(JSON.stringify({ latencyMs, cpu: currentCpu() }));
  }
  exe.dispose();
  disposeAll(args);
  await backend.dispose();
  process.exit(0);
}
const latencyMs = await timeExecutions(backend, exe, args, 10, runs);
console.log(JSON.stringify({ primeLoadMs, loadsMs, latencyMs, outputsSha256, startupMs: backend.startupMs }));
exe.dispose();
disposeAll(args);
await backend.dispose();

/**
 * One fresh process for bench/gpu/diag/hedged-loads.ts: a PJRT backend with the given loader
 * threads and hedgeLoads, timed on what a restart does.
 *   - first: the process's first load of <program.pjrt> (the restart figure of issue 3);
 *   - later: `later` more loads of it, one at a time;
 *   - burst: every program of <burst> (comma list of .pjrt files) asked for at once, as a model's
 *     programs are: wall time until all are loaded.
 * Then the first load's program runs once on the bundle's weights and reference input, and its
 * outputs' sha256 are printed, so the parent can check that every setting gives the same bytes.
 * Prints one JSON line.
 *
 *   bun bench/gpu/diag/hedged-load-child.ts <plugin.so> <bundle dir> <batch> <program.pjrt> <loadThreads> <hedge> <later> [burst]
 */
import { loadBundle, uploadAll } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { disposeAll, downloadAll, inputsFor, moduleFor, sha256Each, uploadWeights } from "../../lib/bundle-io.ts";
import { currentCpu } from "../../lib/current-cpu.ts";

const [pluginPath, bundleDir, batchArg, programPath, threadsArg, hedgeArg, laterArg, burstArg] = process.argv.slice(2);
if (!pluginPath || !bundleDir || !batchArg || !programPath || !threadsArg || !hedgeArg || !laterArg) {
  console.error(
    "usage: bun bench/gpu/diag/hedged-load-child.ts <plugin.so> <bundle dir> <batch> <program.pjrt> <loadThreads> <hedge> <later> [burst]",
  );
  process.exit(2);
}
const ms = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;
const read = async (path: string) => new Uint8Array(await Bun.file(path).arrayBuffer());

const backend = createPjrtBackend({
  pluginPath,
  isolateCompile: false,
  loadThreads: Number(threadsArg),
  hedgeLoads: Number(hedgeArg),
});
const bytes = await read(programPath);
const burst = await Promise.all((burstArg ?? "").split(",").filter(Boolean).map(read));

let t0 = performance.now();
const exe = await backend.deserialize(bytes, {});
const firstMs = ms(t0);
const laterMs: number[] = [];
for (let i = 0; i < Number(laterArg); i++) {
  // Spaced so that the copies still running from the previous load are done and destroyed.
  await Bun.sleep(100);
  t0 = performance.now();
  const again = await backend.deserialize(bytes, {});
  laterMs.push(ms(t0));
  again.dispose();
}
let burstMs: number | null = null;
if (burst.length) {
  await Bun.sleep(100);
  t0 = performance.now();
  const loaded = await Promise.all(burst.map((b) => backend.deserialize(b, {})));
  burstMs = ms(t0);
  for (const e of loaded) e.dispose();
}

const bundle = await loadBundle(bundleDir);
const batch = Number(batchArg);
const weights = await uploadWeights(backend, bundle);
const inputs = await uploadAll(backend, inputsFor(bundle, moduleFor(bundle, batch), batch).tensors);
const outs = await backend.execute(exe, [...inputs, ...weights]);
const host = await downloadAll(backend, outs);
const outputsSha256 = sha256Each(host);
disposeAll([...outs, ...inputs, ...weights]);
exe.dispose();
console.log(
  JSON.stringify({ firstMs, laterMs, burstMs, outputsSha256, cpu: currentCpu(), startupMs: backend.startupMs }),
);
await backend.dispose();

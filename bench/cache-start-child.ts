/**
 * One worker start for bench/cache-start.bench.ts: open the program cache, load every bundle of
 * the repository, get every program (compile or load), upload the weights, and print the time
 * since process start as one JSON line. What a real worker does before it reports ready, minus
 * the HTTP server.
 *
 *   bun bench/cache-start-child.ts <repository> <stateDir>
 */
import { type AbstractBackend, discoverBundles, loadBundle } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { ProgramCache } from "@xlaserve/cache";

type Factory = (options?: object) => AbstractBackend | Promise<AbstractBackend>;

/**
 * The engine under test: the CPU engine, or with XLASERVE_BENCH_ENGINE=pjrt the PJRT backend on
 * a GPU host (imported only there: it needs a plugin).
 */
async function createEngine(): Promise<AbstractBackend> {
  if (process.env.XLASERVE_BENCH_ENGINE === "pjrt") {
    // The GPU tests' plugin lookup: XLASERVE_PJRT_PLUGIN, else jax-cuda13/12-pjrt's plugin.
    const { findGpuPlugin } = await import("../tests/gpu/support/plugin.ts");
    const plugin = await findGpuPlugin();
    if ("skip" in plugin) throw new Error(plugin.skip);
    const pkg = "@xlaserve/backend-pjrt";
    const { createPjrtBackend } = (await import(pkg)) as { createPjrtBackend: Factory };
    return await createPjrtBackend({ pluginPath: plugin.path });
  }
  return createReactantBackend();
}

const [repository, stateDir] = process.argv.slice(2) as [string, string];
// Phases, in ms: where a start's time goes besides the programs themselves.
const phases = { startAndImports: performance.now(), engine: 0, cacheOpen: 0, bundles: 0, programs: 0, weights: 0 };
const lap = (() => {
  let last = performance.now();
  return (phase: Exclude<keyof typeof phases, "startAndImports">) => {
    const now = performance.now();
    phases[phase] += now - last;
    last = now;
  };
})();
const backend = await createEngine();
lap("engine");
const cache = await ProgramCache.open({ stateDir, onWarning: (w) => console.error(`warning: ${w.message}`) });
lap("cacheOpen");
const programs: { model: string; module: string; outcome: string; ms: number }[] = [];
for (const loc of discoverBundles(repository)) {
  const bundle = await loadBundle(loc.dir);
  cache.syncModuleHashes(bundle);
  lap("bundles");
  for (const module of bundle.modules) {
    const r = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true } });
    programs.push({ model: bundle.name, module: module.file, outcome: r.outcome, ms: (r.compileMs ?? r.loadMs)! });
  }
  lap("programs");
  for (const name of bundle.weights.argumentOrder) await backend.upload(bundle.weights.tensor(name));
  lap("weights");
}
const readyMs = performance.now();
cache.close();
console.log(JSON.stringify({ readyMs, phases, programs, identity: backend.identity() }));
await backend.dispose();

/**
 * One worker start for bench/cache-start.bench.ts: open the program cache, load every bundle of
 * the repository, get every program (compile or load), upload the weights, and print the time
 * since process start as one JSON line. What a real worker does before it reports ready, minus
 * the HTTP server.
 *
 *   bun bench/cache-start-child.ts <repository> <stateDir>
 */
import { discoverBundles, loadBundle } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { ProgramCache } from "@xlaserve/cache";

const [repository, stateDir] = process.argv.slice(2) as [string, string];
const t0 = performance.now();
const backend = await createReactantBackend();
const cache = await ProgramCache.open({ stateDir, onWarning: (w) => console.error(`warning: ${w.message}`) });
const programs: { model: string; module: string; outcome: string; ms: number }[] = [];
for (const loc of discoverBundles(repository)) {
  const bundle = await loadBundle(loc.dir);
  cache.syncModuleHashes(bundle);
  for (const module of bundle.modules) {
    const r = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true } });
    programs.push({ model: bundle.name, module: module.file, outcome: r.outcome, ms: (r.compileMs ?? r.loadMs)! });
  }
  for (const name of bundle.weights.argumentOrder) await backend.upload(bundle.weights.tensor(name));
}
const readyMs = performance.now();
cache.close();
console.log(JSON.stringify({ readyMs, setupMs: t0, programs }));

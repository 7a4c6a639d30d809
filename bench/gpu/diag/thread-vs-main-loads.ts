/**
 * Diagnostic: whether a program load on a loader thread (the default, load-pool.ts) takes longer
 * than the same load on the client's own thread. One process compiles the bundle's program, then
 * loads its serialized bytes `pairs` times each way, in turns (the side going first alternates),
 * so both sides see the same moments of this virtual machine's varying CPU speed.
 *
 *   bun bench/gpu/diag/thread-vs-main-loads.ts <plugin.so> <bundle dir> <batch> [pairs=15]
 */
import { loadBundle } from "@xlaserve/core";
import { type PjrtExecutable, createPjrtBackend } from "@xlaserve/backend-pjrt";
import { compileOptionsProto } from "../../../packages/backend-pjrt/src/compile-options.ts";
import { deserializeExecutable } from "../../../packages/backend-pjrt/src/runtime/executable.ts";
import { compileSerialized, moduleFor } from "../../lib/bundle-io.ts";
import { median, round } from "../../lib/stats.ts";

const [pluginPath, bundleDir, batchArg, pairsArg] = process.argv.slice(2);
if (!pluginPath || !bundleDir || !batchArg) {
  console.error("usage: bun bench/gpu/diag/thread-vs-main-loads.ts <plugin.so> <bundle dir> <batch> [pairs=15]");
  process.exit(2);
}
const pairs = Number(pairsArg ?? 15);
const backend = createPjrtBackend({ pluginPath, isolateCompile: false, loadThreads: 1 });
await backend.loadersReady();
const bundle = await loadBundle(bundleDir);
const bytes = await compileSerialized(backend, moduleFor(bundle, Number(batchArg)));
const proto = compileOptionsProto({});

async function timed(onThread: boolean): Promise<number> {
  const t0 = performance.now();
  const exe = onThread ? await backend.deserialize(bytes, {}) : deserializeExecutable(backend.client, bytes, proto);
  const ms = performance.now() - t0;
  (exe as PjrtExecutable).dispose();
  return ms;
}
// One of each first: the thread's and the process's first loads are not part of the comparison.
await timed(true);
await timed(false);
const thread: number[] = [];
const main: number[] = [];
for (let i = 0; i < pairs; i++) {
  if (i % 2 === 0) {
    thread.push(await timed(true));
    main.push(await timed(false));
  } else {
    main.push(await timed(false));
    thread.push(await timed(true));
  }
}
const round2 = (x: number) => round(x, 2);
console.log(
  JSON.stringify({
    program: `${bundle.name} b${batchArg}`,
    pairs,
    threadMedianMs: round2(median(thread)),
    mainMedianMs: round2(median(main)),
    threadOverMain: round2(median(thread) / median(main)),
    perPairRatio: thread.map((t, i) => round2(t / (main[i] as number))),
    threadMs: thread.map(round2),
    mainMs: main.map(round2),
  }),
);
await backend.dispose();

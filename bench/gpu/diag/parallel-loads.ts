/**
 * Diagnostic: whether XLA's client lets program loads overlap. A worker restarting many programs
 * could deserialize them on several threads at once, as the load is CPU work inside the plugin
 * (bench/results/pjrt-load-trace-2026-11-30.json). For each thread count T, T threads each load
 * the same serialized program `loads` times into one client at the same time; prints the wall
 * time, loads per second against one thread's, and each load's own time. The loaded programs are
 * then freed on the main thread; one of each round is run on the bundle's inputs first, and its
 * outputs compared with those of a load made on the main thread.
 *
 *   bun bench/gpu/diag/parallel-loads.ts <plugin.so> <bundle dir> <batch> <program.pjrt> [threads=1,2,4] [loads=4]
 */
import { type Executable, loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { disposeAll, inputsFor, moduleFor, runOnceSha256, uploadAll, uploadWeights } from "../../lib/bundle-io.ts";
import { PjrtExecutable } from "../../../packages/backend-pjrt/src/runtime/executable.ts";
import { median, summarize } from "../../lib/stats.ts";
import type { LoadJob } from "./parallel-load-worker.ts";

const [pluginPath, bundleDir, batchArg, programPath, threadsArg, loadsArg] = process.argv.slice(2);
if (!pluginPath || !bundleDir || !batchArg || !programPath) {
  console.error(
    "usage: bun bench/gpu/diag/parallel-loads.ts <plugin.so> <bundle dir> <batch> <program.pjrt> [threads=1,2,4] [loads=4]",
  );
  process.exit(2);
}
const threadCounts = (threadsArg ?? "1,2,4").split(",").map(Number);
const loads = Number(loadsArg ?? 4);
const backend = createPjrtBackend({ pluginPath, isolateCompile: false });
const program = new Uint8Array(await Bun.file(programPath).arrayBuffer());
const bundle = await loadBundle(bundleDir);
const batch = Number(batchArg);
const args = [
  ...(await uploadAll(backend, inputsFor(bundle, moduleFor(bundle, batch), batch).tensors)),
  ...(await uploadWeights(backend, bundle)),
];
// The plugin's one-time set-up happens on a first load: outside the timed rounds. Its outputs are
// the reference for the programs loaded on other threads.
const mainLoaded = await backend.deserialize(program, {});
const reference = await runOnceSha256(backend, mainLoaded, args);
mainLoaded.dispose();
const runsOnce = async (exe: Executable) =>
  (await runOnceSha256(backend, exe, args)) === reference ? "same outputs" : "OTHER outputs";

interface ThreadResult {
  handles: number[];
  ms: number[];
  startAt: number;
  endAt: number;
}

/** A thread that has opened the plugin and holds the program, waiting for "go". */
async function startThread(plugin: string): Promise<{ go: () => Promise<ThreadResult> }> {
  const worker = new Worker(new URL("./parallel-load-worker.ts", import.meta.url).href);
  let answer: (data: Record<string, unknown>) => void = () => {};
  let fail: (error: Error) => void = () => {};
  worker.onmessage = (event) => answer(event.data);
  worker.onerror = (event) => fail(new Error(String(event.message)));
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      answer = (data) => (data.error ? reject(new Error(String(data.error))) : resolve(data));
      fail = reject;
    });
  const ready = next();
  const job: LoadJob = { pluginPath: plugin, client: backend.client.handle, program, loads };
  worker.postMessage(job);
  await ready;
  return {
    go: async () => {
      const done = next();
      worker.postMessage("go");
      try {
        return (await done) as unknown as ThreadResult;
      } finally {
        worker.terminate();
      }
    },
  };
}

const rounds: Record<string, unknown>[] = [];
const checks: string[] = [];
let oneThreadRate = 0;
for (const threads of threadCounts) {
  const ready = await Promise.all(Array.from({ length: threads }, () => startThread(pluginPath as string)));
  const results = await Promise.all(ready.map((t) => t.go()));
  // From the first thread's first load to the last thread's last: thread start-up is not counted.
  const wallMs = Math.max(...results.map((r) => r.endAt)) - Math.min(...results.map((r) => r.startAt));
  const each = results.flatMap((r) => r.ms);
  const executables = results.flatMap((r) => r.handles).map((h) => new PjrtExecutable(backend.client, h));
  const rate = (threads * loads) / wallMs;
  if (threads === 1) oneThreadRate = rate;
  rounds.push({
    threads,
    loads: threads * loads,
    wallMs: +wallMs.toFixed(2),
    loadsPerSecondVsOneThread: oneThreadRate ? +(rate / oneThreadRate).toFixed(3) : null,
    eachLoadMs: summarize(each),
  });
  console.error(
    `${threads} thread(s): ${threads * loads} loads in ${wallMs.toFixed(1)} ms; each ${median(each).toFixed(2)} ms`,
  );
  const [first, ...rest] = executables;
  for (const e of rest) e.dispose();
  if (first) {
    // One of them runs, so the loads were real.
    checks.push(await runsOnce(first));
    first.dispose();
  }
}
console.log(JSON.stringify({ program: programPath.replace(/^.*\//, ""), rounds, checks }));
disposeAll(args);
await backend.dispose();

/**
 * Diagnostic: one small request's steps on PJRT (upload, execute, download), medians of 500, and
 * CPU per request over 300 more, for one event-wait mode (auto, callback or poll).
 *
 *   bun bench/gpu/diag/small-request.ts <plugin.so> <bundle dir> [auto|callback|poll]
 */
import { loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { inputsFor, moduleFor, uploadWeights } from "../../lib/bundle-io.ts";
import { summarize } from "../../lib/stats.ts";

const [pluginPath, bundleDir, mode] = process.argv.slice(2);
const be = createPjrtBackend({ pluginPath: pluginPath!, isolateCompile: false, eventWait: (mode ?? "auto") as "auto" });
const bundle = await loadBundle(bundleDir!);
const module = moduleFor(bundle, 1);
const exe = await be.compile({ bytes: await module.read(), format: module.format }, {});
const weights = await uploadWeights(be, bundle);
const input = inputsFor(bundle, module, 1).tensors[0]!;
const t = { upload: [] as number[], execute: [] as number[], download: [] as number[], total: [] as number[] };
for (let i = 0; i < 520; i++) {
  const t0 = performance.now();
  const x = await be.upload(input);
  const t1 = performance.now();
  const outs = await be.execute(exe, [x, ...weights]);
  const t2 = performance.now();
  await Promise.all(outs.map((o) => be.download(o)));
  const t3 = performance.now();
  if (i >= 20) {
    t.upload.push(t1 - t0);
    t.execute.push(t2 - t1);
    t.download.push(t3 - t2);
    t.total.push(t3 - t0);
  }
  x.dispose();
  for (const o of outs) o.dispose();
}
const cpu0 = process.cpuUsage();
const w0 = performance.now();
for (let i = 0; i < 300; i++) {
  const x = await be.upload(input);
  const outs = await be.execute(exe, [x, ...weights]);
  await Promise.all(outs.map((o) => be.download(o)));
  x.dispose();
  for (const o of outs) o.dispose();
}
const wall = performance.now() - w0;
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    mode: mode ?? "auto",
    medians: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, summarize(v).median])),
    cpuUsPerRequest: (cpu.user + cpu.system) / 300,
    wallUsPerRequest: (wall * 1000) / 300,
  }),
);
await be.dispose();

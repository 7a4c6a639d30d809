/**
 * Diagnostic: what a program's source locations cost its deserialize-and-load. Compiles the
 * bundle's module for `batch` twice, as exported and with every location alias set to unknown
 * (withUnknownLocations, what the PJRT backend compiles by default), serializes both, then takes
 * turns loading the two, `rounds` times, with a fixed CPU task (sha256 of 16 MiB) after each load
 * as a gauge of the host's speed at that moment. Also: both programs' outputs for the same inputs,
 * and their latencies in alternating blocks. SAVE_DIR=dir writes <dir>/<variant>/<model>.b<N>.pjrt.
 *
 *   bun bench/gpu/diag/load-breakdown.ts <plugin.so> <bundle dir> <batch> [rounds]
 */
import { loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { withUnknownLocations } from "../../../packages/backend-pjrt/src/module-locations.ts";
import {
  disposeAll,
  inputsFor,
  moduleFor,
  runOnceSha256,
  timeExecutions,
  uploadAll,
  uploadWeights,
} from "../../lib/bundle-io.ts";
import { median, summarize } from "../../lib/stats.ts";

const [pluginPath, bundleDir, batchArg, roundsArg] = process.argv.slice(2);
if (!pluginPath || !bundleDir) {
  console.error("usage: bun bench/gpu/diag/load-breakdown.ts <plugin.so> <bundle dir> <batch> [rounds]");
  process.exit(2);
}
const batch = Number(batchArg ?? 1);
const rounds = Number(roundsArg ?? 15);
const be = createPjrtBackend({ pluginPath, isolateCompile: false });
const bundle = await loadBundle(bundleDir);
const module = moduleFor(bundle, batch);
const exported = { bytes: await module.read(), format: module.format, origin: module.path };
// The backend strips locations by default: keepLocations compiles the module exactly as exported.
const sources = { exported, unknownLocations: withUnknownLocations(exported) };
const keep = { exported: true, unknownLocations: false };

const gaugeInput = new Uint8Array(16 << 20).map((_, i) => i * 31);
function gauge(): number {
  const t0 = performance.now();
  new Bun.CryptoHasher("sha256").update(gaugeInput).digest();
  return performance.now() - t0;
}
const weights = await uploadWeights(be, bundle);
const inputs = await uploadAll(be, inputsFor(bundle, module, batch).tensors);
const args = [...inputs, ...weights];
const names = Object.keys(sources) as (keyof typeof sources)[];
const programs: Record<string, Uint8Array> = {};
const figures: Record<string, Record<string, unknown>> = {};
for (const name of names) {
  const source = sources[name];
  const t0 = performance.now();
  const exe = await be.compile(source, { keepLocations: keep[name] });
  const compileMs = performance.now() - t0;
  const bytes = await be.serialize(exe);
  programs[name] = bytes;
  if (process.env.SAVE_DIR) {
    mkdirSync(join(process.env.SAVE_DIR, name), { recursive: true });
    await Bun.write(join(process.env.SAVE_DIR, name, `${bundle.name}.b${batch}.pjrt`), bytes);
  }
  figures[name] = {
    moduleTextBytes: source.bytes.byteLength,
    programBytes: bytes.byteLength,
    compileMs,
    outputsSha256: await runOnceSha256(be, exe, args),
  };
  exe.dispose();
}

const loads: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const gauges: number[] = [];
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    const t0 = performance.now();
    const exe = await be.deserialize(programs[name]!, {});
    loads[name]!.push(+(performance.now() - t0).toFixed(3));
    exe.dispose();
    gauges.push(+gauge().toFixed(3));
  }
}
const latency: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const loaded = Object.fromEntries(
  await Promise.all(names.map(async (n) => [n, await be.deserialize(programs[n]!, {})])),
);
for (let blk = 0; blk < 10; blk++) {
  for (const name of blk % 2 === 0 ? names : [...names].reverse()) {
    latency[name]!.push(...(await timeExecutions(be, loaded[name], args, 2, 20)));
  }
}
for (const name of names) loaded[name]!.dispose();
disposeAll(args);
for (const name of names) {
  figures[name]!.loadMs = summarize(loads[name]!);
  figures[name]!.loadsInOrder = loads[name];
  figures[name]!.latencyMs = summarize(latency[name]!);
}
console.log(
  JSON.stringify({
    model: bundle.name,
    batch,
    rounds,
    startupMs: be.startupMs,
    variants: figures,
    loadRatioUnknownToExported: median(loads.unknownLocations!) / median(loads.exported!),
    outputsIdentical: figures.exported!.outputsSha256 === figures.unknownLocations!.outputsSha256,
    gaugeSha256Of16MiBMs: summarize(gauges),
    gaugesInOrder: gauges,
  }),
);
await be.dispose();

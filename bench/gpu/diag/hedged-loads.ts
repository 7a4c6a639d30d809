/**
 * Diagnostic for pjrt.hedgeLoads (load-pool.ts): does running a lone load as copies on idle loader
 * threads, keeping the first loaded, bring a restart's first load down? On the H200 host one load
 * took 25-34 ms on some vCPUs and 38-52 ms on others, and the restart's first load (median of
 * fresh processes) stayed near 50 ms against a 40 ms goal.
 *
 * Compiles the bundle's programs once (one per batch) and serializes them, then starts fresh
 * processes (hedged-load-child.ts) taking turns over the settings, round after round, so every
 * setting sees the same moments of the host: per process the first load, 3 later loads, and a
 * burst (all the programs asked for at once), plus the outputs' hashes, which must agree.
 *
 *   bun bench/gpu/diag/hedged-loads.ts --bundle DIR [--batches 1,32] [--settings 4:0,4:1,4:3]
 *       [--rounds 6] [--later 3] [--plugin SO] [--results-dir D]
 * A setting is loadThreads:hedgeLoads.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { intFlag, listFlag, parseFlags } from "../../lib/args.ts";
import { compileSerialized, moduleFor } from "../../lib/bundle-io.ts";
import { findCudaPlugin } from "../../lib/pjrt.ts";
import { describeFailure, lastJsonLine, runProcess } from "../../lib/proc.ts";
import { BenchResult } from "../../lib/results.ts";
import { median, round, summarize } from "../../lib/stats.ts";

const USAGE = `
bun bench/gpu/diag/hedged-loads.ts --bundle DIR [options]
  --bundle DIR        the bundle (ResNet-50 exported by tools/export_jax_bundle.py)
  --batches L         batch sizes, one program each (default 1,32)
  --settings L        loadThreads:hedgeLoads settings taking turns (default 4:0,4:1,4:3)
  --rounds N          fresh processes per setting and program (default 6)
  --later N           later loads per process (default 3)
  --plugin SO         PJRT plugin (default: $XLASERVE_PJRT_PLUGIN, else jax-cuda13-pjrt's)
  --results-dir DIR   where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  bundle: { type: "string" },
  batches: { type: "string" },
  settings: { type: "string" },
  rounds: { type: "string" },
  later: { type: "string" },
  plugin: { type: "string" },
  "results-dir": { type: "string" },
});
if (typeof values.bundle !== "string") {
  console.error(`--bundle is required\n${USAGE}`);
  process.exit(2);
}
const bundleDir = values.bundle;
const batches = listFlag(values.batches, ["1", "32"]).map(Number);
const settings = listFlag(values.settings, ["4:0", "4:1", "4:3"]).map((s) => {
  const [threads, hedge] = s.split(":").map(Number);
  if (!Number.isInteger(threads) || !Number.isInteger(hedge)) {
    console.error(`a setting is loadThreads:hedgeLoads, got ${s}\n${USAGE}`);
    process.exit(2);
  }
  return { name: s, threads: threads as number, hedge: hedge as number };
});
const rounds = intFlag(values.rounds, 6, "rounds");
const later = intFlag(values.later, 3, "later");
const pluginPath = findCudaPlugin(typeof values.plugin === "string" ? values.plugin : undefined);
const CHILD = new URL("./hedged-load-child.ts", import.meta.url).pathname;

const result = new BenchResult("pjrt-hedged-loads");
if (typeof values["results-dir"] === "string") result.dir = values["results-dir"];
const bundle = await loadBundle(bundleDir);
result.figure("settings", { bundle: bundle.name, batches, settings: settings.map((s) => s.name), rounds, later });

// One compile per batch, serialized for every process to load.
const work = mkdtempSync(join(tmpdir(), "hedged-loads-"));
const files: string[] = [];
const compiler = createPjrtBackend({ pluginPath, isolateCompile: false, loadThreads: 0 });
for (const batch of batches) {
  const file = join(work, `${bundle.name}.b${batch}.pjrt`);
  writeFileSync(file, await compileSerialized(compiler, moduleFor(bundle, batch)));
  files.push(file);
}
await compiler.dispose();

type Child = {
  firstMs: number;
  laterMs: number[];
  burstMs: number | null;
  outputsSha256: string[];
  cpu: number | null;
};
const runs: Record<string, Record<string, Child[]>> = {};
const failures: string[] = [];
for (let r = 0; r < rounds; r++) {
  for (const [i, batch] of batches.entries()) {
    // The setting going first moves round by round.
    for (let k = 0; k < settings.length; k++) {
      const s = settings[(r + k) % settings.length] as (typeof settings)[number];
      const child = await runProcess(
        [
          process.execPath,
          CHILD,
          pluginPath,
          bundleDir,
          String(batch),
          files[i] as string,
          String(s.threads),
          String(s.hedge),
          String(later),
          files.join(","),
        ],
        { timeoutMs: 120_000 },
      );
      const json = lastJsonLine(child.stdout) as Child | null;
      if (child.code !== 0 || !json) {
        failures.push(`b${batch} ${s.name}: ${describeFailure(child)}`);
        continue;
      }
      const bySetting = runs[`b${batch}`] ?? {};
      runs[`b${batch}`] = bySetting;
      bySetting[s.name] = [...(bySetting[s.name] ?? []), json];
    }
  }
  console.log(`round ${r + 1}/${rounds} done`);
  result.checkpoint();
}
rmSync(work, { recursive: true, force: true });

const firstLoads = (children: readonly Child[]) => children.map((c) => c.firstMs);
const bursts = (children: readonly Child[]) => children.flatMap((c) => (c.burstMs === null ? [] : [c.burstMs]));
const base = settings[0] as (typeof settings)[number];
for (const [program, bySetting] of Object.entries(runs)) {
  const figures: Record<string, unknown> = {};
  const hashes = new Set(Object.values(bySetting).flatMap((cs) => cs.map((c) => c.outputsSha256.join(","))));
  for (const [name, children] of Object.entries(bySetting)) {
    figures[name] = {
      firstLoadMs: summarize(firstLoads(children)),
      laterLoadMs: summarize(children.flatMap((c) => c.laterMs)),
      burstMs: summarize(bursts(children)),
      firstLoadUnder40ms: median(firstLoads(children)) < 40,
      firstLoads: firstLoads(children),
      cpus: children.map((c) => c.cpu),
    };
  }
  figures.outputsIdenticalAcrossSettings = hashes.size === 1;
  result.figure(program, figures);
  const baseChildren = bySetting[base.name] ?? [];
  for (const s of settings.slice(1)) {
    const children = bySetting[s.name] ?? [];
    result.ratio(
      `${program} first load ${s.name}/${base.name}`,
      { label: `median first load ${s.name}`, value: round(median(firstLoads(children))) },
      { label: `median first load ${base.name}`, value: round(median(firstLoads(baseChildren))) },
    );
    result.ratio(
      `${program} burst ${s.name}/${base.name}`,
      { label: `median burst ${s.name}`, value: round(median(bursts(children))) },
      { label: `median burst ${base.name}`, value: round(median(bursts(baseChildren))) },
    );
  }
}
for (const f of failures) result.error("child", f);
result.write();

/**
 * Process start to first result from a cached executable (issue 3): a fresh `bun` process that
 * loads the PJRT plugin, deserializes the serialized ResNet-50 batch-1 program, uploads weights,
 * runs once and downloads (bench/gpu/first-result-child.ts), against a fresh python process of
 * bench/anchors/jax_anchor.py first-result with a warm JAX persistent compilation cache (warmed
 * by an earlier process). Whole processes, wall clock from spawn to the result line on stdout,
 * median of --runs, runs interleaved. JAX is measured with its default allocator settings and
 * with XLA_PYTHON_CLIENT_PREALLOCATE=false; the ratio is also given against the faster of the two.
 *
 *   bun bench/gpu/first-result.bench.ts --bundle DIR [--program FILE] [--runs 3] [--plugin SO]
 *       [--jax-cache DIR] [--results-dir D]
 */
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { anchorUnavailable, runAnchor } from "../lib/anchor.ts";
import { intFlag, parseFlags } from "../lib/args.ts";
import { describeFailure, lastJsonLine, runProcess } from "../lib/proc.ts";
import { findCudaPlugin } from "../lib/pjrt.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/gpu/first-result.bench.ts --bundle DIR [options]
  --bundle DIR        the ResNet-50 bundle (exported with --jax-exported), required
  --program FILE      its serialized batch-1 PJRT program (default: compiled now into a temp file)
  --runs N            measured starts per side (default 3)
  --plugin SO         PJRT plugin (default: $XLASERVE_PJRT_PLUGIN, else jax-cuda13-pjrt's)
  --jax-cache DIR     JAX persistent compilation cache directory (default: a fresh temp dir)
  --results-dir DIR   where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  bundle: { type: "string" },
  program: { type: "string" },
  runs: { type: "string" },
  plugin: { type: "string" },
  "jax-cache": { type: "string" },
  "results-dir": { type: "string" },
});
if (typeof values.bundle !== "string") {
  console.error(`--bundle is required\n${USAGE}`);
  process.exit(2);
}
const bundleDir = resolve(values.bundle);
const runs = Math.max(1, intFlag(values.runs, 3, "runs"));
const work = mkdtempSync(join(tmpdir(), "xlaserve-first-result-"));
const program = resolve((values.program as string | undefined) ?? join(work, "program.b1.pjrt"));
const jaxCache = resolve((values["jax-cache"] as string | undefined) ?? join(work, "jax-cache"));
const CHILD = join(import.meta.dir, "first-result-child.ts");

const result = new BenchResult("first-result");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", {
  bundleDir,
  program,
  runs,
  jaxCache,
  measure: "spawn -> result line on stdout (wall clock)",
});

const pluginPath = await result.step("plugin", () => findCudaPlugin(values.plugin as string | undefined));
if (pluginPath && !existsSync(program)) {
  await result.step("prepare serialized program", async () => {
    const p = await runProcess([process.execPath, CHILD, "prepare", pluginPath, bundleDir, program], {
      timeoutMs: 300_000,
    });
    if (p.code !== 0) throw new Error(describeFailure(p));
    result.note(`serialized program compiled now (${round(p.wallMs)} ms process) into ${program}`);
  });
}

const anchorWhy = anchorUnavailable(bundleDir, "cuda", 1);
if (anchorWhy) result.error("JAX anchor", anchorWhy);
else {
  await result.step("warm the JAX persistent cache", async () => {
    const warm = await runAnchor({ mode: "first-result", bundleDir, batch: 1, platform: "cuda", cacheDir: jaxCache });
    if (!warm.ok) throw new Error(warm.error ?? "failed");
    const entries = existsSync(jaxCache) ? readdirSync(jaxCache).length : 0;
    result.figure("jaxCacheWarmup", {
      resultLineMs: round(warm.resultLineMs ?? Number.NaN),
      wallMs: round(warm.wallMs),
      cacheEntries: entries,
    });
    if (entries === 0) result.note("the JAX cache directory is empty after warming: JAX's runs below compile");
  });
}

const ours: { resultLineMs: number; wallMs: number; inProcessMs: number }[] = [];
const hashes: string[] = [];
// Where each fresh process's time went: step ends on the child's clock, plugin start-up steps.
const ourPhases: unknown[] = [];
const jaxDefault: { resultLineMs: number; wallMs: number; inProcessMs: number }[] = [];
const jaxNoPrealloc: { resultLineMs: number; wallMs: number; inProcessMs: number }[] = [];
const jaxPhases: Record<string, unknown[]> = { "jax default": [], "jax preallocate=false": [] };
for (let r = 0; r < runs; r++) {
  if (pluginPath && existsSync(program)) {
    await result.step(`xlaserve start ${r}`, async () => {
      const p = await runProcess([process.execPath, CHILD, "first", pluginPath, bundleDir, program], {
        timeoutMs: 120_000,
      });
      const json = lastJsonLine(p.stdout);
      const line = p.stdoutLines.find((l) => l.line.startsWith("{"));
      if (p.code !== 0 || !json || !line) throw new Error(describeFailure(p));
      ours.push({ resultLineMs: line.atMs, wallMs: p.wallMs, inProcessMs: json.inProcessMs as number });
      hashes.push((json.outputsSha256 as string[] | undefined)?.join(",") ?? "");
      ourPhases.push({ phases: json.phases, pluginStartupMs: json.pluginStartupMs });
      console.log(`  xlaserve start ${r}: first result at ${line.atMs.toFixed(1)} ms (exit ${p.wallMs.toFixed(1)} ms)`);
    });
  }
  if (!anchorWhy) {
    for (const [label, env, into] of [
      ["jax default", {}, jaxDefault],
      ["jax preallocate=false", { XLA_PYTHON_CLIENT_PREALLOCATE: "false" }, jaxNoPrealloc],
    ] as const) {
      await result.step(`${label} start ${r}`, async () => {
        const a = await runAnchor({
          mode: "first-result",
          bundleDir,
          batch: 1,
          platform: "cuda",
          cacheDir: jaxCache,
          env: { ...env },
        });
        if (!a.ok || a.resultLineMs === null) throw new Error(a.error ?? "no result line");
        into.push({ resultLineMs: a.resultLineMs, wallMs: a.wallMs, inProcessMs: a.result?.in_process_ms as number });
        jaxPhases[label]?.push(a.result?.phases ?? null);
        console.log(
          `  ${label} start ${r}: first result at ${a.resultLineMs.toFixed(1)} ms (exit ${a.wallMs.toFixed(1)} ms)`,
        );
      });
    }
  }
}

const fig = (xs: typeof ours) => ({
  resultLineMs: summarize(xs.map((x) => x.resultLineMs)),
  exitMs: summarize(xs.map((x) => x.wallMs)),
  inProcessMs: summarize(xs.map((x) => x.inProcessMs)),
});
result.figure("xlaserve", fig(ours));
result.figure("xlaservePhases", ourPhases);
// One serialized program loaded by several fresh processes must give the same bytes every time.
result.figure("outputsSha256", hashes);
result.figure("outputsIdenticalAcrossFreshProcesses", hashes.length > 1 ? new Set(hashes).size === 1 : null);
result.figure("jaxDefault", fig(jaxDefault));
result.figure("jaxPreallocateFalse", fig(jaxNoPrealloc));
result.figure("jaxPhases", jaxPhases);
const m = (xs: typeof ours) => (xs.length ? round(median(xs.map((x) => x.resultLineMs))) : null);
result.ratio(
  "first result xlaserve/jax(default)",
  { label: "xlaserve ms", value: m(ours) },
  { label: "jax warm-cache ms", value: m(jaxDefault) },
  "<= 0.25",
);
const best = [m(jaxDefault), m(jaxNoPrealloc)].filter((x): x is number => x !== null);
result.ratio(
  "first result xlaserve/jax(best setting)",
  { label: "xlaserve ms", value: m(ours) },
  { label: "jax warm-cache ms (faster of default / no preallocate)", value: best.length ? Math.min(...best) : null },
  "<= 0.25",
);
result.write(resultsDir(values["results-dir"] as string | undefined));

/**
 * Issue 7's probe figures at the worker level: every model's run scratch measured with the
 * peak-memory reset (ARCHITECTURE rule 5) against without it (the monotone peak, which on a GPU
 * carries compile-time autotuning scratch), the budget resolved before and after a model is added
 * through the watcher, and each model's on-demand weight load.
 *
 *   bun bench/memory-probe.bench.ts --engine reactant
 *   bun bench/memory-probe.bench.ts --engine pjrt --plugin /path/xla_cuda_plugin.so --add /tmp/resnet50
 *
 * Programs are compiled in this process (a cold cache both times) so compile scratch lands in the
 * allocator the probe reads. Writes bench/results/memory-probe-<engine>.json (or --out).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { AbstractBackend, HostTensor } from "@xlaserve/core";
import { createLogger, zeros } from "@xlaserve/core";
import { createPjrtBackend } from "../packages/backend-pjrt/src/index.ts";
import { createReactantBackend } from "../packages/backend-reactant/src/index.ts";
import { type StartedWorker, startWorker } from "../apps/worker/src/index.ts";
import type { RuntimeModel } from "../apps/worker/src/model/runtime-model.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    engine: { type: "string", default: "reactant" },
    plugin: { type: "string" },
    repository: { type: "string", default: resolve(import.meta.dir, "../examples/models") },
    add: { type: "string" },
    out: { type: "string" },
    loads: { type: "string", default: "20" },
  },
});
const engine = values.engine as "reactant" | "pjrt";
const log = createLogger({ level: "warn" });
const MB = 1024 * 1024;
const mb = (b: number) => Math.round((b / MB) * 100) / 100;

function makeBackend(): AbstractBackend {
  if (engine === "pjrt") {
    if (!values.plugin) throw new Error("--plugin is required with --engine pjrt");
    return createPjrtBackend({ pluginPath: values.plugin, isolateCompile: false });
  }
  return createReactantBackend();
}

/** Keeps the backend across workers; optionally turns the peak reset off. */
function wrap(real: AbstractBackend, reset: boolean): AbstractBackend {
  return new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === "dispose") return async () => {};
      if (prop === "resetPeakMemory" && !reset) return () => {};
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

function copyRepo(extra: string | undefined): string {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-probe-"));
  const repo = join(root, "models");
  const filter = (src: string) => !src.includes("/.cache");
  cpSync(values.repository as string, repo, { recursive: true, filter });
  if (extra) cpSync(extra, join(repo, basename(extra)), { recursive: true, filter });
  return repo;
}

async function run(backend: AbstractBackend, repo: string, dynamic: boolean): Promise<StartedWorker> {
  return startWorker({
    env: {},
    repository: repo,
    port: 0,
    backend,
    logger: log,
    config: {
      cache: { enabled: false }, // cold compiles in this process, both runs
      repository: { dynamic, pollIntervalMs: 100 },
      memory: { weightFraction: 0.9, wiggle: 0.1 },
    },
  });
}

const figures = (m: RuntimeModel) => ({
  weightMB: mb(m.weightBytes),
  scratchMB: mb(m.scratchBytes),
  perProgram: m.probe?.perProgram.map((p) => ({ batch: p.batchSize, scratchMB: mb(p.scratchBytes), ms: p.ms })),
});
const budgetMB = (w: StartedWorker) => {
  const b = w.registry.currentBudget();
  return b
    ? {
        limitMB: mb(b.limitBytes),
        poolMB: mb(b.poolBytes),
        onDemandMB: mb(b.onDemandBytes),
        pinnedMB: mb(b.pinnedBytes),
        maxScratchMB: mb(b.maxScratchBytes),
      }
    : null;
};

const real = makeBackend();
const identity = real.identity();
const result: Record<string, unknown> = { date: new Date().toISOString(), engine, device: identity };

// 1. Without the reset: every model added from the start (cold cache, compiled here).
{
  const repo = copyRepo(values.add);
  const w = await run(wrap(real, false), repo, false);
  result.withoutReset = Object.fromEntries(w.registry.models().map((m) => [m.name, figures(m)]));
  result.budgetWithoutReset = budgetMB(w);
  await w.stop();
  rmSync(join(repo, ".."), { recursive: true, force: true });
}

// 2. With the reset: the examples at start, then `--add` through the watcher.
{
  const repo = copyRepo(undefined);
  const w = await run(wrap(real, true), repo, true);
  result.withReset = Object.fromEntries(w.registry.models().map((m) => [m.name, figures(m)]));
  result.budgetAtStart = budgetMB(w);
  if (values.add) {
    const name = basename(values.add);
    cpSync(values.add, join(repo, name), { recursive: true, filter: (s) => !s.includes("/.cache") });
    const t0 = Date.now();
    while (!w.registry.loadedNames().includes(name)) {
      const state = w.registry.slotState(name);
      if (state?.state === "UNAVAILABLE") throw new Error(`${name} failed to load: ${state.reason}`);
      if (Date.now() - t0 > 300_000) throw new Error(`${name} was not loaded by the watcher`);
      await Bun.sleep(100);
    }
    const added = w.registry.models().find((m) => m.name === name) as RuntimeModel;
    (result.withReset as Record<string, unknown>)[name] = figures(added);
    result.budgetAfterWatcherAdd = budgetMB(w);
    result.addedModel = name;
  }
  // On-demand weight loads: evict, then time the upload the next request triggers.
  const loads: Record<string, unknown> = {};
  for (const m of w.registry.models()) {
    const inputs = new Map<string, HostTensor>(
      m.inputs.map((s, i) => [
        s.name,
        zeros(s.dtype, m.inputShape(i, m.variants()[0] ?? null, m.compiledBatchSizes[0] ?? 1)),
      ]),
    );
    const ms: number[] = [];
    for (let i = 0; i < Number(values.loads); i++) {
      if (!w.registry.weights.evictNow(m.ownerId)) break;
      await m.infer({ inputs });
      ms.push(w.registry.weights.lastLoadMs);
    }
    ms.sort((a, b) => a - b);
    loads[m.name] = {
      weightMB: mb(m.weightBytes),
      p50ms: Math.round((ms[Math.floor(ms.length / 2)] ?? Number.NaN) * 100) / 100,
      maxms: Math.round((ms.at(-1) ?? Number.NaN) * 100) / 100,
      runs: ms.length,
    };
  }
  result.onDemandWeightLoad = loads;
  await w.stop();
  rmSync(join(repo, ".."), { recursive: true, force: true });
}
await real.dispose();

console.log(JSON.stringify(result, null, 2));
const out = values.out ?? resolve(import.meta.dir, "results", `memory-probe-${engine === "pjrt" ? "gpu" : "cpu"}.json`);
mkdirSync(resolve(out, ".."), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

/**
 * Device memory (issue 7), two parts:
 *
 * 1. Per model (every bundle under --models: the examples and ResNet-50), in a fresh process each
 *    (bench/gpu/memory-probe-child.ts): weight bytes, and run scratch measured with the device's
 *    peak reset before the probe against without the reset, after an in-process compile with
 *    autotuning: the difference autotuning makes. Also each model's on-demand weight load ms
 *    (every weight uploaded again from the mapped file): ResNet-50's is the issue's GPU figure.
 * 2. The worker (real CLI, watcher on): the weight budget resolved at start over the repository
 *    without ResNet-50, then ResNet-50 is moved into the repository while the worker runs and the
 *    budget re-resolved in place is read from the "weight budget resolved" log line and from the
 *    server metadata's extra field. ResNet-50 is made host-resident (--residency resnet50=host),
 *    so each request loads its weights on demand; worker_weight_load_seconds_total /
 *    worker_weight_loads_total give the worker's own on-demand load time.
 *
 *   bun bench/gpu/memory-probe.bench.ts --models DIR [--resnet-from DIR] [--engine pjrt]
 *       [--plugin SO] [--requests 5] [--skip-children] [--skip-worker] [--results-dir D]
 */
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { discoverBundles } from "@xlaserve/core";
import { intFlag, parseFlags } from "../lib/args.ts";
import { describeFailure, lastJsonLine, runProcess } from "../lib/proc.ts";
import { findCudaPlugin } from "../lib/pjrt.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { round, summarize } from "../lib/stats.ts";
import { type StartedWorkerProcess, startWorkerProcess } from "../lib/worker.ts";

const USAGE = `
bun bench/gpu/memory-probe.bench.ts --models DIR [options]
  --models DIR        model repository (examples + resnet50), required
  --added NAME        the model added while the worker runs (default resnet50)
  --resnet-from DIR   copy the added model from here (e.g. a bundle whose .cache/ is warm);
                      default <models>/<added>
  --engine E          worker engine: pjrt (default) | reactant
  --plugin SO         PJRT plugin (default: $XLASERVE_PJRT_PLUGIN, else jax-cuda13-pjrt's)
  --requests N        inference requests to the added model (default 5)
  --skip-children     skip part 1 (per-model probes)
  --skip-worker       skip part 2 (worker budget before / after)
  --timeout-s N       limit per child / per worker wait (default 400)
  --results-dir DIR   where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  added: { type: "string" },
  "resnet-from": { type: "string" },
  engine: { type: "string" },
  plugin: { type: "string" },
  requests: { type: "string" },
  "skip-children": { type: "boolean" },
  "skip-worker": { type: "boolean" },
  "timeout-s": { type: "string" },
  "results-dir": { type: "string" },
});
if (typeof values.models !== "string") {
  console.error(`--models is required\n${USAGE}`);
  process.exit(2);
}
const modelsDir = resolve(values.models);
const added = (values.added as string | undefined) ?? "resnet50";
const addedFrom = resolve((values["resnet-from"] as string | undefined) ?? join(modelsDir, added));
const engine = ((values.engine as string | undefined) ?? "pjrt") as "pjrt" | "reactant";
const requests = intFlag(values.requests, 5, "requests");
const timeoutMs = intFlag(values["timeout-s"], 400, "timeout-s") * 1000;
const CHILD = join(import.meta.dir, "memory-probe-child.ts");

const result = new BenchResult(`memory-probe-${engine}`);
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", { modelsDir, added, addedFrom, engine, requests });
const plugin =
  engine === "pjrt"
    ? await result.step("plugin", () => findCudaPlugin(values.plugin as string | undefined))
    : undefined;

// Part 1: per-model probes, each in a fresh process.
if (!values["skip-children"] && engine === "pjrt" && plugin) {
  const perModel: Record<string, unknown>[] = [];
  for (const loc of discoverBundles(modelsDir)) {
    await result.step(`probe ${loc.name}`, async () => {
      const p = await runProcess([process.execPath, CHILD, plugin, loc.dir], { timeoutMs });
      const json = lastJsonLine(p.stdout);
      if (p.code !== 0 || !json) throw new Error(describeFailure(p));
      perModel.push(json);
      const mb = (x: unknown) => `${(Number(x) / 2 ** 20).toFixed(1)} MiB`;
      console.log(
        `  ${loc.name}: weights ${mb(json.weightBytes)}, scratch with reset ${mb(json.scratchWithResetBytes)}, without ${mb(json.scratchWithoutResetBytes)}, weight load ${(json.weightLoadMs as { median: number }).median} ms`,
      );
      result.ratio(
        `${loc.name} scratch without/with peak reset`,
        { label: "scratch without reset (bytes)", value: json.scratchWithoutResetBytes as number },
        { label: "scratch with reset (bytes)", value: json.scratchWithResetBytes as number },
      );
    });
  }
  result.figure("perModel", perModel);
  const r = perModel.find((m) => m.model === added);
  if (r) result.figure(`${added} on-demand weight load ms (direct upload)`, r.weightLoadMs);
} else if (!values["skip-children"] && engine !== "pjrt") {
  result.note("part 1 (per-model PJRT probes) needs --engine pjrt; skipped");
}

// Part 2: the worker's budget before and after a model is added while it runs.
if (!values["skip-worker"] && (engine !== "pjrt" || plugin)) {
  const work = mkdtempSync(join(tmpdir(), "xlaserve-memory-probe-"));
  const repository = join(work, "models");
  const stateDir = join(work, "state");
  let w: StartedWorkerProcess | undefined;
  try {
    await result.step("worker: budget before / after add", async () => {
      if (!existsSync(join(addedFrom, "manifest.yaml"))) throw new Error(`${addedFrom} is not a bundle`);
      cpSync(modelsDir, repository, {
        recursive: true,
        filter: (src) => basename(src) !== ".cache" && resolve(src) !== join(modelsDir, added),
      });
      w = await startWorkerProcess({
        repository,
        stateDir,
        engine,
        plugin,
        watch: true,
        pollIntervalMs: 200,
        extraArgs: ["--residency", `${added}=host`],
        timeoutMs,
      });
      const worker = w;
      const memoryLine = worker.logs.find((l) => l.msg === "memory") ?? null;
      const before = await (await fetch(`${worker.url}/v2`)).json();
      result.figure("budgetAtStart", { log: memoryLine, serverMetadataExtra: extraOf(before) });
      console.log(`  worker ready at ${worker.readyMs.toFixed(0)} ms; adding ${added}`);

      // Appear atomically: copy under a hidden name (never a bundle), then rename.
      const t0 = performance.now();
      const incoming = join(repository, `.${added}.incoming`);
      cpSync(addedFrom, incoming, { recursive: true });
      renameSync(incoming, join(repository, added));
      const resolved = await worker.waitForLog(
        (l) => l.msg === "weight budget resolved" && l.cause === "load",
        timeoutMs,
      );
      const addMs = performance.now() - t0;
      const loaded = worker.logs.find((l) => l.msg === "model loaded" && l.model === added) ?? null;
      const after = await (await fetch(`${worker.url}/v2`)).json();
      result.figure("budgetAfterAdd", {
        log: resolved,
        serverMetadataExtra: extraOf(after),
        modelLoaded: loaded,
        addToResolvedMs: round(addMs),
      });
      const b0 = ((extraOf(before) as { budget?: Record<string, number> } | null)?.budget ?? null) as Record<
        string,
        number
      > | null;
      const b1 = resolved as unknown as Record<string, number>;
      if (b0) {
        result.figure("budgetChange", {
          poolBytes: { before: b0.poolBytes, after: b1.poolBytes },
          onDemandBytes: { before: b0.onDemandBytes, after: b1.onDemandBytes },
          maxScratchBytes: { before: b0.maxScratchBytes, after: b1.maxScratchBytes },
          pinnedBytes: { before: b0.pinnedBytes, after: b1.pinnedBytes },
        });
      }
      console.log(
        `  budget re-resolved ${addMs.toFixed(0)} ms after the add: ${String((resolved as { summary?: string }).summary ?? "")}`,
      );

      // On-demand loads through the worker (the added model is host-resident).
      const meta = (await (await fetch(`${worker.url}/v2/models/${added}`)).json()) as {
        inputs: { name: string; datatype: string; shape: number[] }[];
      };
      result.figure(`${added} model metadata extra`, extraOf(meta));
      const body = JSON.stringify({
        inputs: meta.inputs.map((i) => {
          const shape = i.shape.map((d) => (d < 0 ? 1 : d));
          const n = shape.reduce((a, b) => a * b, 1);
          return { name: i.name, datatype: i.datatype, shape, data: new Array(n).fill(0) };
        }),
      });
      const latencies: number[] = [];
      for (let k = 0; k < requests; k++) {
        const r0 = performance.now();
        const res = await fetch(`${worker.url}/v2/models/${added}/infer`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        await res.arrayBuffer();
        latencies.push(performance.now() - r0);
        if (res.status !== 200) throw new Error(`infer ${added} answered ${res.status}`);
      }
      const metrics = await (await fetch(`${worker.url}/metrics`)).text();
      const seconds = metricValue(metrics, "worker_weight_load_seconds_total", added);
      const count = metricValue(metrics, "worker_weight_loads_total", added);
      result.figure(`${added} via worker`, {
        residency: "host",
        requests,
        requestMs: summarize(latencies),
        weightLoads: count,
        weightLoadSecondsTotal: seconds,
        meanWeightLoadMs: seconds !== null && count ? round((seconds * 1000) / count) : null,
      });
      console.log(`  ${added} on-demand loads through the worker: ${count} loads, ${seconds} s total`);
    });
  } finally {
    await (w as StartedWorkerProcess | undefined)?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
result.write(resultsDir(values["results-dir"] as string | undefined));

/** The xlaserve extension of a KServe metadata answer ("xlaserve", else "extra"). */
function extraOf(meta: unknown): unknown {
  const m = meta as { xlaserve?: unknown; extra?: unknown } | null;
  return m?.xlaserve ?? m?.extra ?? null;
}

function metricValue(text: string, name: string, model: string): number | null {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!line.includes(`model="${model}"`)) continue;
    const v = Number(line.trim().split(/\s+/).at(-1));
    if (Number.isFinite(v)) return v;
  }
  return null;
}

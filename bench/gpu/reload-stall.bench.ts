/**
 * What a hot reload costs the other models: the real worker CLI (PJRT, watching its repository)
 * serves the MLP one request at a time over HTTP while ResNet-50's modules are edited on disk, so
 * the reload compiles both of its programs (a compile child each, seconds) and loads them. Every
 * MLP answer's latency is recorded, before the edit (the anchor, same run) and between the edit
 * and the "model reloaded" line. A backend that compiled or loaded in line with the requests
 * would hold MLP answers up for the whole compile.
 *
 *   bun bench/gpu/reload-stall.bench.ts --models DIR [--plugin SO] [--repo-from DIR] [--engine pjrt|reactant]
 *       [--results-dir D]
 *
 * --repo-from: a repository with its .cache/ (worker-start.bench.ts --keep-repo), so the worker
 * starts warm; its mlp and resnet50 bundles are used. Otherwise both are copied from --models.
 */
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseFlags } from "../lib/args.ts";
import { findCudaPlugin } from "../lib/pjrt.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { percentile, round, summarize } from "../lib/stats.ts";
import { type LogRecord, startWorkerProcess } from "../lib/worker.ts";

const USAGE = `
bun bench/gpu/reload-stall.bench.ts --models DIR [--plugin SO] [--repo-from DIR] [--engine pjrt|reactant] [--results-dir DIR]
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  plugin: { type: "string" },
  "repo-from": { type: "string" },
  "results-dir": { type: "string" },
  engine: { type: "string" },
});
if (typeof values.models !== "string") {
  console.error(`--models is required\n${USAGE}`);
  process.exit(2);
}
const engine = values.engine === "reactant" ? "reactant" : "pjrt";
const result = new BenchResult(`reload-stall-${engine}`);
// Also where result.step's checkpoints go, so a partial file lands beside the final one.
result.dir = resultsDir(values["results-dir"] as string | undefined);
const plugin =
  engine === "pjrt"
    ? await result.step("plugin", () => findCudaPlugin(values.plugin as string | undefined))
    : undefined;
if (engine === "pjrt" && !plugin) {
  result.write();
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), "xlaserve-reload-stall-"));
const repository = join(work, "models");
const from = typeof values["repo-from"] === "string" ? resolve(values["repo-from"]) : resolve(values.models);
for (const name of ["mlp", "resnet50"]) cpSync(join(from, name), join(repository, name), { recursive: true });
if (existsSync(join(from, ".cache"))) cpSync(join(from, ".cache"), join(repository, ".cache"), { recursive: true });

const features = Array.from({ length: 64 }, (_, i) => Math.sin(i));
const body = JSON.stringify({ inputs: [{ name: "features", datatype: "FP32", shape: [1, 64], data: features }] });

interface Answer {
  at: number;
  ms: number;
  status: number;
}

try {
  const w = await startWorkerProcess({
    repository,
    stateDir: join(work, "state"),
    engine,
    plugin,
    watch: true,
    pollIntervalMs: 100,
    timeoutMs: 300_000,
  });
  result.figure("worker ready ms", round(w.readyMs));
  try {
    const answers: Answer[] = [];
    let stop = false;
    const t0 = performance.now();
    const client = (async () => {
      while (!stop) {
        const s = performance.now();
        const r = await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body });
        await r.arrayBuffer();
        answers.push({ at: s - t0, ms: performance.now() - s, status: r.status });
      }
    })();
    await Bun.sleep(2000);
    // Editing a module changes its hash: the reload compiles (cache miss) rather than loads.
    const editAt = performance.now() - t0;
    const mlir = readdirSync(join(repository, "resnet50")).filter((f) => f.endsWith(".mlir"));
    for (const f of mlir)
      appendFileSync(join(repository, "resnet50", f), `\n// edited by reload-stall ${Date.now()}\n`);
    const reloaded: LogRecord = await w.waitForLog(
      (l) => (l.msg === "model reloaded" || l.msg === "model reload failed") && l.model === "resnet50",
      240_000,
    );
    const doneAt = performance.now() - t0;
    await Bun.sleep(1000);
    stop = true;
    await client;

    result.figure("reload", {
      line: reloaded.msg,
      ms: reloaded.ms,
      phases: reloaded.phases,
      programs: reloaded.programs,
      editToReloadedMs: round(doneAt - editAt),
      editedFiles: mlir,
    });
    const before = answers.filter((a) => a.at + a.ms < editAt);
    const during = answers.filter((a) => a.at + a.ms >= editAt && a.at <= doneAt);
    const failed = answers.filter((a) => a.status !== 200).length;
    result.figure("mlp latency ms before the edit", summarize(before.map((a) => a.ms)));
    result.figure("mlp latency ms during the reload", summarize(during.map((a) => a.ms)));
    result.figure("mlp answers", { before: before.length, during: during.length, failed });
    // The longest time without an answer while the reload ran: what a stall would show.
    const ends = during.map((a) => a.at + a.ms).sort((a, b) => a - b);
    let gap = ends.length ? ends[0]! - editAt : doneAt - editAt;
    let gapEndsAt = ends[0] ?? doneAt;
    for (let i = 1; i < ends.length; i++) {
      if (ends[i]! - ends[i - 1]! > gap) {
        gap = ends[i]! - ends[i - 1]!;
        gapEndsAt = ends[i]!;
      }
    }
    result.figure("longest ms without an mlp answer during the reload", round(gap));
    // Where in the reload it fell: ms before "model reloaded" was logged.
    result.figure("that gap ended, ms before the reload finished", round(doneAt - gapEndsAt));
    const p99 = (xs: readonly Answer[]) => {
      const ms = xs.map((a) => a.ms);
      return round(percentile(ms, 99));
    };
    result.ratio(
      "mlp p99 latency during reload / before",
      { label: "p99 ms during the reload", value: p99(during) },
      { label: "p99 ms before the edit (same run)", value: p99(before) },
    );
    result.ratio(
      "longest gap between mlp answers / reload time",
      { label: "longest ms without an answer", value: round(gap) },
      { label: "edit to 'model reloaded' ms", value: round(doneAt - editAt) },
    );
    if (failed) result.error("requests", `${failed} MLP requests failed`);
  } finally {
    await w.stop();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
result.write();

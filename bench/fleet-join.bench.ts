/**
 * Joining a fleet: process start to all models ready (/v2/health/ready answers 200) for a worker
 * that joins a warm fleet cache (its own repository copy without .cache/, an empty state
 * directory, the fleet's PostgreSQL catalog and shared blob directory already holding every
 * program), against a warm local cache (the same worker's second start: every program in the
 * bundle's .cache/) and a cold start (nothing cached anywhere: every program compiled), through
 * the real CLI. The three take turns, run after run, so each sees the same machine.
 * Goal: joining the fleet within 1.2x of the warm local start.
 *
 *   bun bench/fleet-join.bench.ts [--models DIR] [--engine reactant|pjrt|auto] [--plugin SO]
 *       [--catalog postgres|sqlite] [--runs 5] [--timeout-s 400] [--results-dir D]
 *
 * --catalog sqlite (for a host without PostgreSQL, such as the GPU host): the joining workers
 * share one state directory, where the SQLite catalog lives; the blob store is the same.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve, sep } from "node:path";
import { freshDatabase, repoPostgres } from "../tests/support/postgres.ts";
import { intFlag, parseFlags } from "./lib/args.ts";
import { BenchResult, resultsDir } from "./lib/results.ts";
import { median, round, summarize } from "./lib/stats.ts";
import { startWorkerProcess } from "./lib/worker.ts";

const USAGE = `
bun bench/fleet-join.bench.ts [options]
  --models DIR       model repository (copied; default examples/models)
  --engine E         reactant (default) | pjrt | auto
  --plugin SO        PJRT plugin for --engine pjrt
  --catalog C        postgres (default: the repository's cluster, scripts/postgres.mjs) | sqlite
  --runs N           starts of each kind (default 5)
  --timeout-s N      limit per start (default 400)
  --results-dir DIR  where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  engine: { type: "string" },
  plugin: { type: "string" },
  catalog: { type: "string" },
  runs: { type: "string" },
  "timeout-s": { type: "string" },
  "results-dir": { type: "string" },
});
const source = resolve((values.models as string | undefined) ?? join(import.meta.dir, "..", "examples", "models"));
const engine = ((values.engine as string | undefined) ?? "reactant") as "pjrt" | "reactant" | "auto";
const plugin = values.plugin as string | undefined;
const runs = Math.max(1, intFlag(values.runs, 5, "runs"));
const timeoutMs = intFlag(values["timeout-s"], 400, "timeout-s") * 1000;

const catalog = (values.catalog as string | undefined) ?? "postgres";
if (catalog !== "postgres" && catalog !== "sqlite") {
  console.error(`--catalog must be postgres or sqlite\n${USAGE}`);
  process.exit(2);
}
const result = new BenchResult(`fleet-join-${engine}`);
result.dir = resultsDir(values["results-dir"] as string | undefined);
const work = mkdtempSync(join(tmpdir(), "xlaserve-fleet-join-"));
let catalogUrl = "sqlite";
let dropDatabase = async () => {};
if (catalog === "postgres") {
  const pg = repoPostgres();
  if ("skip" in pg) {
    console.error(`fleet-join --catalog postgres needs PostgreSQL (${pg.skip}); --catalog sqlite runs without`);
    process.exit(1);
  }
  const db = await freshDatabase(pg.url, "bench");
  catalogUrl = db.url;
  dropDatabase = () => db[Symbol.asyncDispose]();
}
const blobs = join(work, "blobs");
const fleetArgs = ["--cache-store", blobs, "--cache-catalog", catalogUrl];
result.figure("settings", {
  models: source,
  engine,
  runs,
  catalog:
    catalog === "postgres"
      ? "PostgreSQL (Debian's package, scripts/postgres.mjs)"
      : "SQLite in a shared state directory",
  store: "a shared directory",
});

let n = 0;
/** A worker's own repository copy (no .cache/) and state directory; fleet joiners on SQLite share theirs. */
function freshCopy(sharedState = false): { repository: string; stateDir: string } {
  const dir = join(work, `w${n++}`);
  // The bundles only: a source repository may hold a .cache/ from other runs.
  cpSync(source, join(dir, "models"), {
    recursive: true,
    filter: (path) => !relative(source, path).split(sep).includes(".cache"),
  });
  return { repository: join(dir, "models"), stateDir: sharedState ? join(work, "fleet-state") : join(dir, "state") };
}
const joiner = () => freshCopy(catalog === "sqlite");

async function start(
  kind: string,
  where: { repository: string; stateDir: string },
  extraArgs: string[],
): Promise<number> {
  const w = await startWorkerProcess({ ...where, engine, ...(plugin ? { plugin } : {}), extraArgs, timeoutMs });
  const loaded = w.logs.filter((r) => r.msg === "model loaded");
  await w.stop();
  console.log(`  ${kind}: ready in ${w.readyMs.toFixed(0)} ms (${loaded.length} models)`);
  return w.readyMs;
}

const times: Record<"cold" | "warmLocal" | "fleetJoin", number[]> = { cold: [], warmLocal: [], fleetJoin: [] };
try {
  // Fill the fleet once (not timed), and make the warm local repository.
  await start("fleet seed", joiner(), fleetArgs);
  const local = freshCopy();
  await start("local seed", local, []);
  for (let i = 0; i < runs; i++) {
    console.log(`run ${i + 1}/${runs}`);
    times.cold.push(await start("cold", freshCopy(), []));
    times.warmLocal.push(await start("warm local", local, []));
    times.fleetJoin.push(await start("fleet join", joiner(), fleetArgs));
  }
} catch (e) {
  result.error("starts", e);
} finally {
  rmSync(work, { recursive: true, force: true });
  await dropDatabase();
}
for (const [k, v] of Object.entries(times)) result.figure(`${k}ReadyMs`, v.length ? summarize(v) : null);
const med = (v: number[]) => (v.length ? round(median(v), 1) : null);
result.ratio(
  "fleetJoinOverWarmLocal",
  { label: "joining a warm fleet cache, median ready ms", value: med(times.fleetJoin) },
  { label: "warm local cache, median ready ms", value: med(times.warmLocal) },
  "<= 1.2",
);
result.ratio(
  "coldOverWarmLocal",
  { label: "cold start, median ready ms", value: med(times.cold) },
  { label: "warm local cache, median ready ms", value: med(times.warmLocal) },
);
if (engine === "reactant") {
  result.notes.push(
    "The CPU engine compiles these small modules in milliseconds, so cold and warm differ little here; the fleet's cost (catalog lookups, blob reads, local copies) is what the first ratio measures. The GPU run (--engine pjrt) is where a cold start compiles for real.",
  );
}
result.write();

#!/usr/bin/env bun
/**
 * The xlaserve CLI: serve | node | compile <repo> | profile <bundle> | cache ls | cache verify |
 * cache prune --max-bytes N | mlir print|info FILE.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { compileOptionsOf, createLogger, elementCount, envWarnings, isXlaserveError, kserveName } from "@xlaserve/core";
import { loadBundle } from "@xlaserve/core/bundle/load.ts";
import { cacheLs, cachePrune, cacheVerify, precompileRepository } from "@xlaserve/cache";
import { parseByteSize } from "@xlaserve/cache/cli/out.ts";
import { formatBytes } from "./memory/budget.ts";
import { chooseEngine, createBackend } from "./engine/create-backend.ts";
import { COMMAND_HELP } from "./cli/command-help.ts";
import { UsageError, badFlagValue, commandError, flagError, isUserError } from "./cli/user-errors.ts";
import { WORKER_VERSION, type WorkerOverrides, resolveWorkerConfig, startWorker } from "./index.ts";
import type { RuntimeModel } from "./model/runtime-model.ts";
import { runMlir } from "./mlir/mlir-command.ts";
import { NODE_HELP, runNode } from "./node/node-command.ts";
import { stopWithParent } from "./node/parent-death.ts";
import { fleetOptions } from "./start/fleet-options.ts";
import { PROFILE_HELP, runProfile } from "./profile/profile-command.ts";

export const HELP = `xlaserve: an inference worker for XLA-compiled models (KServe v2 / Open Inference Protocol)

Usage:
  xlaserve serve [options]                 serve the model repository over HTTP
  xlaserve node [node options] [options]   one worker per GPU, or N CPU workers on one port,
                                           restarted when they die, drained on SIGTERM
                                           (xlaserve node --help)
  xlaserve compile <repository> [options]  compile every program of every bundle into the cache
  xlaserve profile <bundle> [--batch N]    time per op kind and per op of one program on the CPU
                                           engine (xlaserve profile --help)
  xlaserve cache ls [options]              list the program cache's entries
  xlaserve cache verify [options]          check every entry; remove the bad ones (with
                                           --cache-store, the fleet's programs too)
  xlaserve cache prune --max-bytes N       remove least recently hit entries down to N bytes
  xlaserve mlir print FILE                 a module file (text or portable artifact) as StableHLO text
  xlaserve mlir info FILE                  its producer, versions, functions and @main signature
  xlaserve --help                          this text

Options (every one also has an XLASERVE_* environment form; flags win):
  --repository DIR     model repository (XLASERVE_MODEL_REPOSITORY; default examples/models)
  --port N             HTTP port (XLASERVE_PORT; default 8000; 0 picks a free one)
  --host ADDR          interface to bind (default 127.0.0.1)
  --grpc-port N        gRPC port, inference.GRPCInferenceService (XLASERVE_GRPC_PORT; default
                       8001; 0 turns it off; with --port 0 and no --grpc-port, a free one)
  --config FILE        YAML or JSON configuration file
  --engine NAME        auto | pjrt | reactant (XLASERVE_ENGINE; default auto: PJRT when a
                       compatible plugin loads, else the CPU engine)
  --plugin PATH        PJRT plugin (.so) to use (XLASERVE_PJRT_PLUGIN)
  --state-dir DIR      worker state: the program cache's index (default .state)
  --no-cache           compile every program; use no program cache
  --cache-store S      the fleet's shared program store: a directory every worker mounts or
                       s3://bucket/prefix (XLASERVE_CACHE__STORE); each program is then compiled
                       once across the fleet and loaded everywhere
  --cache-catalog C    the fleet's catalog: sqlite (default; workers of one host) or a
                       postgres:// URL (XLASERVE_CACHE__CATALOG)
  --no-watch           do not watch the repository (static mode)
  --poll-interval-ms N repository watcher poll interval (default 2000)
  --memory-limit N     memory the weight budget is computed from (e.g. 2G; default: the
                       device's limit, else the machine's memory)
  --weight-fraction F  share of the limit weights may take (default 0.9)
  --wiggle F           share of the limit kept free (default 0.1)
  --residency M=R      residency of model M: pinned | device | host (repeatable)
  --default-residency R  device | host (default device)
  --per-model N        requests run at once per model (default 16 on the CPU engine, 4 on PJRT)
  --queue-depth N      requests queued per model before 429 (default 64)
  --dynamic-batching   coalesce concurrent requests into one execution (more throughput; a
                       request's output may then differ in the last bits with other traffic)
  --discipline D       which model's queue the device serves next: fifo | fair | edf
                       (XLASERVE_SCHEDULER__DISCIPLINE; default fifo)
  --max-queue-delay-us N  with dynamic batching, how long a partial batch may wait to fill
                       (XLASERVE_SCHEDULER__MAX_QUEUE_DELAY_US; default 0)
  --batch-size-choice C  throughput | fill: the compiled size a coalesced execution runs at
                       (XLASERVE_SCHEDULER__BATCH_SIZE_CHOICE; default throughput)
  --auth-token T       bearer token for the repository load/unload calls (XLASERVE_AUTH_TOKEN)
  --log-level L        debug | info | warn | error (default info)
  --log-format F       auto | json | text (default auto: text on a terminal, json otherwise)
  --max-bytes N        (cache prune) target size, e.g. 500M, 2G
  -h, --help           this text

Environment only:
  XLASERVE_ENGINE_THREAD=0   run the backend on the main thread (default: its own thread)
  XLASERVE_INLINE_MAX_US=N   CPU engine: programs whose measured run takes at most N us run on
                             the HTTP thread (default 50; 0 turns it off)
  XLASERVE_BLAS_THREADS=N    CPU engine: threads for OpenBLAS and for large elementwise loops
                             (default: every core this process may run on; 1: one thread)

Each command's own options: xlaserve <command> --help. xlaserve --version prints the version.

Examples (npx runs the CLI from a checkout once npm start or npm run setup has installed it):
  npm start                                  # the examples on http://127.0.0.1:8000
  npx xlaserve serve --port 9000 --repository /srv/models
  npx xlaserve compile examples/models
  npx xlaserve cache prune --max-bytes 1G
`;

const OPTIONS = {
  repository: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "grpc-port": { type: "string" },
  "http-threads": { type: "string" },
  config: { type: "string" },
  engine: { type: "string" },
  plugin: { type: "string" },
  "state-dir": { type: "string" },
  "no-cache": { type: "boolean" },
  "cache-store": { type: "string" },
  "cache-catalog": { type: "string" },
  "no-watch": { type: "boolean" },
  "poll-interval-ms": { type: "string" },
  "memory-limit": { type: "string" },
  "weight-fraction": { type: "string" },
  wiggle: { type: "string" },
  residency: { type: "string", multiple: true },
  "default-residency": { type: "string" },
  "per-model": { type: "string" },
  "queue-depth": { type: "string" },
  "dynamic-batching": { type: "boolean" },
  discipline: { type: "string" },
  "max-queue-delay-us": { type: "string" },
  "batch-size-choice": { type: "string" },
  "auth-token": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  "max-bytes": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

/** A byte size flag (2G, 500M, 1024), or a configuration error naming the flag. */
function byteSizeFlag(flag: string, value: string): number {
  try {
    return parseByteSize(value);
  } catch (err) {
    throw badFlagValue(flag, value, (err as Error).message);
  }
}

/** A numeric flag's value, or a configuration error naming the flag (not a silent NaN). */
function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n)) throw badFlagValue(flag, v, "expected a number");
  return n;
}

/** Flags -> configuration overrides (validated by the core schema, with clear errors). */
export function overridesFromFlags(values: Values): WorkerOverrides {
  // Still parsed so that a command line using it hears what replaced it, not "unknown option".
  if (values["http-threads"] !== undefined) {
    throw new UsageError(
      "--http-threads was removed (extra HTTP threads did not beat N worker processes on one port); use `xlaserve node --workers N` instead",
    );
  }
  const residency: Record<string, string> = {};
  for (const r of values.residency ?? []) {
    const [model, value] = r.split("=");
    if (!model || !value) throw badFlagValue("residency", r, "expected MODEL=pinned|device|host");
    residency[model] = value;
  }
  const config: Record<string, unknown> = {
    engine: values.engine,
    pjrt: { plugin: values.plugin },
    server: { authToken: values["auth-token"] },
    repository: {
      dynamic: values["no-watch"] ? false : undefined,
      pollIntervalMs: num(values["poll-interval-ms"], "poll-interval-ms"),
    },
    cache: {
      stateDir: values["state-dir"],
      enabled: values["no-cache"] ? false : undefined,
      store: values["cache-store"],
      catalog: values["cache-catalog"],
    },
    memory: {
      limitBytes: values["memory-limit"] ? byteSizeFlag("memory-limit", values["memory-limit"]) : undefined,
      weightFraction: num(values["weight-fraction"], "weight-fraction"),
      wiggle: num(values.wiggle, "wiggle"),
      defaultResidency: values["default-residency"],
      residency: Object.keys(residency).length ? residency : undefined,
    },
    concurrency: {
      perModel: num(values["per-model"], "per-model"),
      queueDepth: num(values["queue-depth"], "queue-depth"),
      dynamicBatching: values["dynamic-batching"] ? true : undefined,
    },
    scheduler: {
      discipline: values.discipline,
      maxQueueDelayUs: num(values["max-queue-delay-us"], "max-queue-delay-us"),
      batchSizeChoice: values["batch-size-choice"],
    },
    log: { level: values["log-level"], format: values["log-format"] },
  };
  return {
    configFile: values.config,
    repository: values.repository,
    port: num(values.port, "port"),
    host: values.host,
    grpcPort: num(values["grpc-port"], "grpc-port"),
    config: config as WorkerOverrides["config"],
  };
}

function curlExample(url: string, models: readonly RuntimeModel[]): string | null {
  const small = [...models].sort((a, b) => inputElements(a) - inputElements(b))[0];
  if (!small) return null;
  const inputs = small.inputs.map((spec) => {
    const shape = spec.dims.map((d) => (d.kind === "batch" ? 1 : d.size < 0 ? 1 : d.size));
    return { name: spec.name, datatype: kserveName(spec.dtype), shape, data: new Array(elementCount(shape)).fill(0) };
  });
  return `curl -s -X POST ${url}/v2/models/${small.name}/infer -H 'content-type: application/json' -d '${JSON.stringify({ inputs })}'`;
}

function inputElements(m: RuntimeModel): number {
  return m.inputs.reduce((a, s) => a + elementCount(s.dims.map((d) => (d.size < 0 ? 1 : d.size))), 0);
}

async function serve(values: Values): Promise<void> {
  const worker = await startWorker({ ...overridesFromFlags(values), handleSignals: true });
  const out = process.stdout;
  out.write(`\nxlaserve ${worker.engine.engine} engine (${worker.engine.reason})\n`);
  for (const m of worker.registry.models()) {
    const records = m.programRecords();
    const hits = records.filter((r) => r.outcome === "hit").length;
    const ms = records.map(
      (r) => `${r.file} ${r.outcome} ${Math.round(r.outcome === "hit" ? r.loadMs : r.compileMs + r.loadMs)} ms`,
    );
    out.write(
      `  loaded ${m.name}: cache ${hits}/${records.length} hit (${ms.join(", ")}), ${Math.round(m.loadMs)} ms total, weights ${formatBytes(m.weightBytes)}, scratch ${formatBytes(m.scratchBytes)} (${m.probe?.source ?? "not probed"}), residency ${m.residency}\n`,
    );
  }
  for (const e of worker.registry.repositoryIndex()) {
    if (e.state !== "READY") out.write(`  NOT loaded ${e.name}: ${e.state} ${e.reason}\n`);
  }
  const b = worker.registry.currentBudget();
  if (b) {
    out.write(
      `  weight budget: pool ${formatBytes(b.poolBytes)} of limit ${formatBytes(b.limitBytes)}, on-demand ${formatBytes(b.onDemandBytes)}, pinned ${formatBytes(b.pinnedBytes)}, max scratch ${formatBytes(b.maxScratchBytes)}\n`,
    );
  }
  out.write(`\nlistening on ${worker.url}\n`);
  if (worker.grpcAddress) out.write(`gRPC (inference.GRPCInferenceService) on ${worker.grpcAddress}\n`);
  const curl = curlExample(worker.url, worker.registry.models());
  if (curl) out.write(`try:\n  ${curl}\n`);
  out.write(`  curl -s ${worker.url}/v2/health/ready -o /dev/null -w '%{http_code}\\n'\n\n`);
}

async function compile(values: Values, repository: string | undefined): Promise<number> {
  if (repository === undefined && values.repository === undefined) {
    throw new UsageError(`compile needs a model repository: xlaserve compile <repository>\n\n${COMMAND_HELP.compile}`);
  }
  const overrides = overridesFromFlags(values);
  const config = resolveWorkerConfig({ ...overrides, repository: repository ?? overrides.repository });
  const log = createLogger({ level: config.log.level, format: config.log.format });
  for (const warning of envWarnings(process.env)) log.warn(warning);
  const engine = await chooseEngine(config, log);
  log.info("engine selected", { engine: engine.engine, reason: engine.reason });
  const backend = await createBackend(engine, config);
  try {
    const summary = await precompileRepository({
      repository: resolve(config.repository.path),
      backend,
      options: compileOptionsOf(config),
      out: process.stdout,
      stateDir: resolve(config.cache.stateDir),
      loadBundle,
      // --no-cache: what is cached is not used; every program is compiled and stored again.
      recompile: values["no-cache"] === true,
    });
    return summary.failed > 0 ? 1 : 0;
  } finally {
    await backend.dispose();
  }
}

async function cache(values: Values, sub: string | undefined): Promise<number> {
  const overrides = overridesFromFlags(values);
  const config = resolveWorkerConfig(overrides);
  const fleet = fleetOptions(config);
  const opts = {
    stateDir: resolve(config.cache.stateDir),
    repository: resolve(config.repository.path),
    out: process.stdout,
  };
  switch (sub) {
    case "ls":
      await cacheLs(opts);
      return 0;
    case "verify": {
      const report = await cacheVerify({ ...opts, ...(fleet ? { fleet } : {}) });
      return report.removed.length + (report.fleet?.removed.length ?? 0) > 0 ? 1 : 0;
    }
    case "prune": {
      if (!values["max-bytes"]) throw new UsageError("cache prune needs --max-bytes N (e.g. 500M)");
      await cachePrune({ ...opts, maxBytes: byteSizeFlag("max-bytes", values["max-bytes"]) });
      return 0;
    }
    default:
      throw new UsageError(
        `${commandError(sub ?? "", ["ls", "verify", "prune"]).message.replace("command", "cache command")}\n\n${COMMAND_HELP.cache}`,
      );
  }
}

const COMMANDS = ["serve", "node", "compile", "profile", "cache", "version", "help"];

export async function main(argv: readonly string[]): Promise<number | null> {
  if (argv[0] === "--version" || argv[0] === "-v" || argv[0] === "version") {
    process.stdout.write(`xlaserve ${WORKER_VERSION}\n`);
    return 0;
  }
  // The node's own flags are not serve's: it parses them and passes the rest to its workers.
  if (argv[0] === "node") {
    if (argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(NODE_HELP);
      return 0;
    }
    return runNode(argv.slice(1));
  }
  if (argv[0] === "profile") {
    if (argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(PROFILE_HELP);
      return 0;
    }
    return runProfile(argv.slice(1));
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    const command = argv.find((a) => !a.startsWith("-"));
    const more = command && COMMAND_HELP[command] ? `xlaserve ${command} --help` : "xlaserve --help";
    throw new UsageError(`${flagError(err as Error, Object.keys(OPTIONS)).message} (${more} lists the options)`);
  }
  const { values, positionals } = parsed;
  const [command, arg] = positionals;
  if (values.help && command !== undefined && COMMAND_HELP[command]) {
    process.stdout.write(COMMAND_HELP[command]);
    return 0;
  }
  if (values.help || command === "help" || command === undefined) {
    process.stdout.write(HELP);
    return command === undefined && !values.help ? 2 : 0;
  }
  switch (command) {
    case "serve":
      if (process.env.XLASERVE_NODE_PARENT_PID) stopWithParent(Number(process.env.XLASERVE_NODE_PARENT_PID));
      await serve(values);
      return null; // keeps running until SIGTERM/SIGINT
    case "compile":
      return compile(values, arg);
    case "cache":
      return cache(values, arg);
    case "mlir":
      return runMlir(arg, positionals[2]);
    default:
      throw new UsageError(`${commandError(command, COMMANDS).message} (xlaserve --help lists the commands)`);
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== null) process.exit(code);
    },
    (err) => {
      // A mistake of the user's is one clear message; a fault of xlaserve's keeps its stack.
      const message = isXlaserveError(err)
        ? `${err.code}: ${err.message}`
        : isUserError(err)
          ? (err as Error).message
          : err instanceof Error
            ? (err.stack ?? err.message)
            : String(err);
      process.stderr.write(`xlaserve: ${message}\n`);
      process.exit(err instanceof UsageError ? err.exitCode : 1);
    },
  );
}

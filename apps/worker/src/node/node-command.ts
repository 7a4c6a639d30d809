import { availableParallelism } from "node:os";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { XlaserveError } from "@xlaserve/core";
import { detectGpus } from "./gpus.ts";
import { planNode } from "./plan.ts";
import { Supervisor } from "./supervisor.ts";

export const NODE_HELP = `xlaserve node: one worker per GPU, or N CPU workers on one port, supervised

Usage: xlaserve node [node options] [serve options]

  --workers N        CPU workers sharing the port through SO_REUSEPORT (default: one per 4
                     cores, at least 1); used when the node has no GPUs or with --cpu
  --gpus LIST|N      GPUs to run a worker each on (ordinals or UUIDs, or a count); default:
                     XLASERVE_GPUS, CUDA_VISIBLE_DEVICES, nvidia-smi, /dev/nvidiaN
  --cpu              run CPU workers even where GPUs are found
  --port P           GPU workers listen on P + i, CPU workers all on P (default XLASERVE_PORT,
                     else 8000; 0 picks a free port for CPU workers)
  --grpc-port G      each worker's gRPC port: G + i for worker i (default XLASERVE_GRPC_PORT,
                     else 8001; 0 turns gRPC off; with --port 0 and no --grpc-port, free ports)
  --backoff-ms N     first restart delay of a worker that died (doubles per failure, capped at
                     30 s; a worker up for 60 s starts over) (default 1000)
  --max-restarts N   consecutive failures of one worker after which the node exits 1 (0: never)
  --grace-seconds S  on SIGTERM each worker drains for at most S seconds before SIGKILL (30)

Every other option is passed to each worker's \`serve\` (see xlaserve --help). Workers share the
state directory, so a program one compiles the others load from the cache.
`;

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));

interface NodeArgs {
  workers?: number;
  gpus?: string;
  cpu: boolean;
  port?: number;
  grpcPort?: number;
  backoffMs: number;
  maxRestarts: number;
  graceMs: number;
  serveArgs: string[];
}

function intFlag(name: string, value: string | undefined, min: number): number {
  if (value === undefined || !/^[0-9]+$/.test(value) || Number(value) < min) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `${name} expects an integer of at least ${min}, got ${JSON.stringify(value ?? "")}`,
    );
  }
  return Number(value);
}

/** Splits the node's own flags from the ones passed to every worker's `serve`. */
export function parseNodeArgs(argv: readonly string[]): NodeArgs {
  const out: NodeArgs = { cpu: false, backoffMs: 1000, maxRestarts: 0, graceMs: 30_000, serveArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    const [flag, inline] =
      raw.startsWith("--") && raw.includes("=")
        ? [raw.slice(0, raw.indexOf("=")), raw.slice(raw.indexOf("=") + 1)]
        : [raw, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case "--workers":
        out.workers = intFlag("--workers", value(), 1);
        break;
      case "--gpus":
        out.gpus = value();
        break;
      case "--cpu":
        out.cpu = true;
        break;
      case "--port":
        out.port = intFlag("--port", value(), 0);
        break;
      case "--grpc-port":
        out.grpcPort = intFlag("--grpc-port", value(), 0);
        break;
      case "--backoff-ms":
        out.backoffMs = intFlag("--backoff-ms", value(), 1);
        break;
      case "--max-restarts":
        out.maxRestarts = intFlag("--max-restarts", value(), 0);
        break;
      case "--grace-seconds":
        out.graceMs = intFlag("--grace-seconds", value(), 0) * 1000;
        break;
      default:
        out.serveArgs.push(raw);
    }
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** `xlaserve node`: plans the children, supervises them until SIGTERM, returns the exit code. */
export async function runNode(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  const args = parseNodeArgs(argv);
  const gpus = args.cpu ? [] : detectGpus({ env: args.gpus !== undefined ? { XLASERVE_GPUS: args.gpus } : env });
  let port = args.port ?? (env.XLASERVE_PORT ? intFlag("XLASERVE_PORT", env.XLASERVE_PORT, 1) : 8000);
  const freeRest = port === 0;
  if (port === 0) {
    if (gpus.length > 0)
      throw new XlaserveError("INVALID_ARGUMENT", "--port 0 works for CPU workers only: GPU workers need ports P + i");
    port = await freePort();
  }
  const cores = availableParallelism();
  const cpuWorkers = args.workers ?? Math.max(1, Math.floor(cores / 4));
  const children = gpus.length > 0 ? gpus.length : cpuWorkers;
  const grpcBase =
    args.grpcPort ?? (env.XLASERVE_GRPC_PORT ? intFlag("XLASERVE_GRPC_PORT", env.XLASERVE_GRPC_PORT, 0) : undefined);
  const grpcPorts =
    grpcBase === 0
      ? Array.from({ length: children }, () => 0)
      : grpcBase === undefined && freeRest
        ? await Promise.all(Array.from({ length: children }, () => freePort()))
        : Array.from({ length: children }, (_, i) => (grpcBase ?? 8001) + i);
  const plan = planNode({ gpus, cpuWorkers, basePort: port, cores, serveArgs: args.serveArgs, grpcPorts });
  const supervisor = new Supervisor(
    plan.map((c) => ({
      name: c.name,
      cmd: [process.execPath, MAIN, "serve", ...c.args],
      env: { ...env, ...c.env, XLASERVE_NODE_PARENT_PID: String(process.pid) },
    })),
    { backoffMs: args.backoffMs, maxRestarts: args.maxRestarts, graceMs: args.graceMs },
  );
  supervisor.log(
    gpus.length > 0
      ? `${plan.length} GPU workers (${gpus.join(", ")}) on ports ${port}-${port + plan.length - 1}`
      : `${plan.length} CPU workers on port ${port} (SO_REUSEPORT)`,
  );
  if (grpcPorts.some((p) => p > 0)) supervisor.log(`gRPC on ports ${grpcPorts.join(", ")}`);
  let signals = 0;
  const onSignal = (sig: string) => {
    signals++;
    if (signals === 1) {
      supervisor.log(`${sig}: draining every worker`);
      supervisor.shutdown(0);
    } else supervisor.hurry();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  return supervisor.run();
}

import { XlaserveError } from "@xlaserve/core";

/** One child of the node: its name in logs, and what it is started with. */
export interface ChildPlan {
  readonly name: string;
  /** Arguments after `serve`. */
  readonly args: readonly string[];
  /** Set on top of the node's environment. */
  readonly env: Readonly<Record<string, string>>;
}

export interface NodePlanInput {
  /** GPU selectors; empty for a CPU node. */
  readonly gpus: readonly string[];
  /** CPU workers for a CPU node. */
  readonly cpuWorkers: number;
  /** GPU workers listen on basePort + i; CPU workers all on basePort. */
  readonly basePort: number;
  /** The machine's cores, shared out among CPU workers. */
  readonly cores: number;
  /** `serve` options passed to every child. */
  readonly serveArgs: readonly string[];
  /**
   * Each child's gRPC port (0: off), passed as --grpc-port. gRPC takes no shared port: every
   * worker of a CPU node has its own. Absent: the children's own setting.
   */
  readonly grpcPorts?: readonly number[];
}

function grpcArgs(input: NodePlanInput, i: number): string[] {
  const port = input.grpcPorts?.[i];
  return port === undefined ? [] : ["--grpc-port", String(port)];
}

/**
 * The node's children: one worker per GPU (CUDA_VISIBLE_DEVICES names only its GPU, ports
 * base + i), or N CPU workers sharing one port through SO_REUSEPORT (the kernel spreads
 * connections over them), each with its share of the cores for OpenBLAS. Device visibility is
 * always set, so a container-wide CUDA_VISIBLE_DEVICES is never inherited by accident.
 */
export function planNode(input: NodePlanInput): ChildPlan[] {
  if (!Number.isInteger(input.basePort) || input.basePort < 1 || input.basePort > 65535) {
    throw new XlaserveError("INVALID_ARGUMENT", `the node's port must be 1-65535, got ${input.basePort}`);
  }
  if (input.gpus.length > 0) {
    if (input.basePort + input.gpus.length - 1 > 65535) {
      throw new XlaserveError("INVALID_ARGUMENT", `ports ${input.basePort}+${input.gpus.length - 1} run past 65535`);
    }
    return input.gpus.map((gpu, i) => ({
      name: `gpu${i}`,
      args: [...input.serveArgs, "--port", String(input.basePort + i), ...grpcArgs(input, i)],
      env: { CUDA_VISIBLE_DEVICES: gpu },
    }));
  }
  if (!Number.isInteger(input.cpuWorkers) || input.cpuWorkers < 1 || input.cpuWorkers > 256) {
    throw new XlaserveError("INVALID_ARGUMENT", `--workers must be an integer from 1 to 256, got ${input.cpuWorkers}`);
  }
  const blasThreads = String(Math.max(1, Math.floor(input.cores / input.cpuWorkers)));
  return Array.from({ length: input.cpuWorkers }, (_, i) => ({
    name: `cpu${i}`,
    args: [...input.serveArgs, "--port", String(input.basePort), ...grpcArgs(input, i)],
    env: {
      CUDA_VISIBLE_DEVICES: "",
      XLASERVE_SERVER__REUSE_PORT: "true",
      XLASERVE_BLAS_THREADS: blasThreads,
    },
  }));
}

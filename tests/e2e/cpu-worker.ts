/**
 * The worker the end-to-end tests start: the CPU engine over a temporary repository, on a free
 * port, with no XLASERVE_* environment, its program cache in the repository's state directory.
 */
import type { Logger } from "@xlaserve/core";
import { type StartedWorker, type WorkerOverrides, startWorker } from "../../apps/worker/src/index.ts";
import type { TempRepo } from "./helpers.ts";

/**
 * `config` holds what a test varies (repository polling, memory limits); it is merged over the
 * above. `overrides` are further startWorker options (inline threshold, engine thread, port).
 */
export function startCpuWorker(
  repo: TempRepo,
  logger: Logger,
  config: NonNullable<WorkerOverrides["config"]>,
  overrides: Omit<WorkerOverrides, "config" | "repository" | "logger" | "env"> = {},
): Promise<StartedWorker> {
  return startWorker({
    env: {},
    repository: repo.repository,
    port: 0,
    logger,
    ...overrides,
    config: { engine: "reactant", cache: { stateDir: repo.stateDir }, ...config },
  });
}

/**
 * A registry over a temporary copy of example bundles on the fake engine (fake-backend.ts), with
 * its watcher; the repository is removed after each test. Shared by the registry's tests.
 */
import { afterEach } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { ProgramSource } from "../src/model/runtime-model.ts";
import { type RegistryOptions, ModelRegistry } from "../src/repository/registry.ts";
import { RepositoryWatcher } from "../src/repository/watcher.ts";
import { type TempRepo, collectLogs, makeRepo, readReference } from "../../../tests/e2e/helpers.ts";
import { FakeBackend, fakePrograms } from "./fake-backend.ts";

let repo: TempRepo | null = null;
afterEach(() => cleanupRepo());

/** Removes the repository the last setup() made (a test that sets up twice frees the first). */
export function cleanupRepo(): void {
  repo?.cleanup();
  repo = null;
}

export function setup(
  models: string[],
  memory: Partial<RegistryOptions["memory"]> = {},
  dynamicBatching = true,
  programOptions: Parameters<typeof fakePrograms>[1] = {},
  /** Wraps the fake programs, to watch or fail individual loads. */
  wrap: (fake: ProgramSource) => ProgramSource = (fake) => fake,
) {
  repo = makeRepo(models);
  const backend = new FakeBackend();
  const programs = fakePrograms(backend, programOptions);
  const logs = collectLogs();
  const registry = new ModelRegistry({
    repository: repo.repository,
    backend,
    platform: "xlaserve_reactant",
    programs: wrap(programs),
    log: logs.logger,
    memory: { weightFraction: 1, wiggle: 0, defaultResidency: "device", ...memory },
    concurrency: { perModel: 2, queueDepth: 64, dynamicBatching },
    serverInfo: () => ({ name: "xlaserve", version: "test", extensions: [], extra: {} }),
  });
  const watcher = new RepositoryWatcher({
    repository: repo.repository,
    intervalMs: 10,
    target: registry,
    log: logs.logger,
  });
  return { repo, backend, programs, logs, registry, watcher };
}

export const mlpInput = (): Map<string, HostTensor> => {
  const ref = readReference("mlp").get(1);
  if (!ref) throw new Error("no mlp b1 reference");
  return ref.inputs;
};

export async function inferMlp(registry: ModelRegistry, name = "mlp"): Promise<Float32Array> {
  const model = registry.getModel(name);
  if (!model) throw new Error(`no model ${name}`);
  const out = await model.infer({ inputs: mlpInput() });
  return out.get("logits")?.data as Float32Array;
}

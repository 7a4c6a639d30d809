/**
 * Test support: a model registry over the real CPU engine on its own thread, for the tests of
 * what runs beside the engine thread (inline runs). Everything it creates is freed by
 * disposeCpuRegistries (call it in afterEach).
 */
import { type HostTensor, tensorBytes } from "@xlaserve/core";
import { type TempRepo, collectLogs, makeRepo } from "../../../tests/e2e/helpers.ts";
import type { LoadedProgram, ProgramSource } from "../src/model/runtime-model.ts";
import { ModelRegistry } from "../src/repository/registry.ts";
import { ThreadedBackend } from "../src/engine-thread/threaded-backend.ts";

const created: { backend: ThreadedBackend; repo: TempRepo }[] = [];

/** `models` (example bundles) served with inline runs at `maxUs`. */
export async function cpuRegistry(
  models: string[],
  maxUs: number,
  residency: "device" | "host" = "device",
  dynamicBatching = false,
) {
  const repo = makeRepo(models);
  const backend = await ThreadedBackend.create({
    module: "@xlaserve/backend-reactant",
    export: "createReactantBackend",
  });
  created.push({ backend, repo });
  const programs: ProgramSource = async (_bundle, module): Promise<LoadedProgram> => {
    const executable = await backend.compile({ bytes: await module.read(), format: module.format }, {});
    return { executable, outcome: "uncached", compileMs: 0, loadMs: 0 };
  };
  const logs = collectLogs();
  const registry = new ModelRegistry({
    repository: repo.repository,
    backend,
    platform: "xlaserve_reactant",
    programs,
    log: logs.logger,
    memory: { weightFraction: 1, wiggle: 0, defaultResidency: residency },
    concurrency: { perModel: 4, queueDepth: 64, dynamicBatching },
    serverInfo: () => ({ name: "x", version: "0", extensions: [], extra: {} }),
    inlineMaxUs: maxUs,
  });
  await registry.loadAll();
  return { registry, logs, backend };
}

/** Frees every engine thread and temporary repository cpuRegistry made. */
export async function disposeCpuRegistries(): Promise<void> {
  for (const { backend, repo } of created.splice(0)) {
    await backend.dispose();
    repo.cleanup();
  }
}

/** A copy of a tensor's bytes (core's tensorBytes, copied); an absent tensor is an error. */
export function bytesOf(t: HostTensor | undefined): Uint8Array {
  if (!t) throw new Error("no tensor");
  return tensorBytes(t).slice();
}

/** The first `rows` rows of a row-major tensor. */
export function rowsOf(x: HostTensor, rows: number): HostTensor {
  const per = x.data.length / (x.shape[0] as number);
  return { dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data: x.data.slice(0, rows * per) };
}

import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import type { LoadedProgram, ProgramSource } from "../src/model/runtime-model.ts";
import { ModelRegistry } from "../src/repository/registry.ts";
import { ThreadedBackend } from "../src/engine-thread/threaded-backend.ts";
import { type TempRepo, collectLogs, makeRepo, readReference } from "../../../tests/e2e/helpers.ts";

let repo: TempRepo | null = null;
let backend: ThreadedBackend | null = null;
afterEach(async () => {
  await backend?.dispose();
  repo?.cleanup();
});

describe("threaded backend (engine on its own thread)", () => {
  test("serves the registry: probe, inference, eviction and reload through the thread", async () => {
    repo = makeRepo(["mlp", "cnn"]);
    backend = await ThreadedBackend.create({
      module: resolve(import.meta.dir, "fake-backend.ts"),
      export: "createFakeBackend",
    });
    const be = backend;
    const programs: ProgramSource = async (_bundle, module): Promise<LoadedProgram> => {
      const executable = await be.compile({ bytes: await module.read(), format: module.format }, {});
      return { executable, outcome: "uncached", compileMs: 0, loadMs: 0 };
    };
    const registry = new ModelRegistry({
      repository: repo.repository,
      backend: be,
      platform: "xlaserve_reactant",
      programs,
      log: collectLogs().logger,
      memory: { weightFraction: 1, wiggle: 0, defaultResidency: "device" },
      concurrency: { perModel: 2, queueDepth: 8 },
      serverInfo: () => ({ name: "x", version: "0", extensions: [], extra: {} }),
    });
    await registry.loadAll();
    const mlp = registry.models().find((m) => m.name === "mlp");
    expect(mlp?.scratchBytes).toBeGreaterThan(0);
    expect(mlp?.scratchBytes).toBeLessThan(50_000_000); // compile scratch reset away
    const inputs = readReference("mlp").get(8)?.inputs as Map<string, HostTensor>;
    const first = await mlp?.infer({ inputs });
    expect(registry.weights.evictNow(mlp?.ownerId ?? "")).toBe(true);
    const second = await mlp?.infer({ inputs });
    expect(Array.from(second?.get("logits")?.data as Float32Array)).toEqual(
      Array.from(first?.get("logits")?.data as Float32Array),
    );
    expect(first?.get("logits")?.shape).toEqual([8, 10]);
    await registry.shutdown();
    const after = await be.refreshMemoryStats();
    expect(after.inUseBytes).toBe(0); // everything freed on shutdown
  });

  test("run calls answer host tensors whether their batch travels packed or mixed with other calls", async () => {
    backend = await ThreadedBackend.create({ module: "@xlaserve/backend-reactant", export: "createReactantBackend" });
    const be = backend;
    const source =
      "func.func @main(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %x, %w : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
    const exe = await be.compile({ bytes: new TextEncoder().encode(source), format: "text" }, {});
    const w = await be.upload({ dtype: "f32", shape: [2], data: new Float32Array([10, 20]) });
    const x = (v: number): HostTensor => ({ dtype: "f32", shape: [2], data: new Float32Array([v, v + 1]) });
    // Packed: run calls only.
    const packed = await Promise.all([be.run(exe, [x(1)], [w]), be.run(exe, [x(2)], [w])]);
    expect(packed.map((r) => Array.from(r[0]?.data as Float32Array))).toEqual([
      [11, 22],
      [12, 23],
    ]);
    // Mixed: while one batch is with the engine, a run and an upload queue up and leave together.
    const inFlight = be.refreshMemoryStats();
    const mixedRun = be.run(exe, [x(3)], [w]);
    const upload = be.upload({ dtype: "f32", shape: [2], data: new Float32Array([1, 1]) });
    await inFlight;
    const [out] = await mixedRun;
    expect(out?.dtype).toBe("f32");
    expect(out?.shape).toEqual([2]);
    expect(Array.from(out?.data as Float32Array)).toEqual([13, 24]);
    (await upload).dispose();
    exe.dispose();
    w.dispose();
  });
});

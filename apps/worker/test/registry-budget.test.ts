/** The registry's loading, memory probe and weight budget: scratch, eviction, refusals, pinning (fake engine). */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { copyBundle, readReference } from "../../../tests/e2e/helpers.ts";
import { cleanupRepo, inferMlp, setup } from "./fake-registry.ts";
describe("registry, probe and budget (fake engine)", () => {
  test("loads every bundle; the probe's scratch excludes compile-time scratch", async () => {
    const { registry, backend, logs } = setup(["mlp", "cnn", "transformer"]);
    await registry.loadAll();
    expect(registry.loadedNames().sort()).toEqual(["cnn", "mlp", "transformer"]);
    for (const m of registry.models()) {
      expect(m.probe?.peakReset).toBe(true);
      expect(m.scratchBytes).toBeGreaterThan(0);
      expect(m.scratchBytes).toBeLessThan(backend.compileScratch); // rule 5
      expect(m.probe?.perProgram.length).toBe(2);
    }
    const resolved = logs.find("weight budget resolved");
    expect(resolved.length).toBe(1);
    expect(resolved[0]?.cause).toBe("startup");
    const b = registry.currentBudget();
    expect(b?.maxScratchBytes).toBe(Math.max(...registry.models().map((m) => m.scratchBytes)));
    expect(registry.isReady()).toBe(true);
    expect(registry.repositoryIndex().map((e) => e.state)).toEqual(["READY", "READY", "READY"]);
  });

  test("the probe waits for work a program load left running, so none of it counts as scratch", async () => {
    const spare = 1 << 30;
    const { registry, backend } = setup(["mlp", "cnn"], {}, true, {}, (fake) => async (bundle, module) => {
      const program = await fake(bundle, module);
      backend.leaveSpare(spare); // called only once setup has returned
      return program;
    });
    await registry.loadAll();
    for (const m of registry.models()) {
      expect(m.probe?.source).toBe("measured");
      expect(m.scratchBytes).toBeGreaterThan(0);
      expect(m.scratchBytes).toBeLessThan(spare);
    }
  });

  test("padding: a batch of 3 runs on the batch-8 program and comes back with 3 rows", async () => {
    const { registry, backend } = setup(["mlp"]);
    await registry.loadAll();
    const ref = readReference("mlp").get(8);
    const x = ref?.inputs.get("features") as HostTensor;
    const three: HostTensor = { dtype: "f32", shape: [3, 64], data: (x.data as Float32Array).slice(0, 3 * 64) };
    const before = backend.executions;
    const out = await registry.getModel("mlp")?.infer({ inputs: new Map([["features", three]]) });
    expect(backend.executions).toBe(before + 1);
    expect(out?.get("logits")?.shape).toEqual([3, 10]);
    expect(out?.get("probabilities")?.shape).toEqual([3, 10]);
  });

  test("on-demand reload: outputs identical before and after an eviction; LRU order across models", async () => {
    const { registry } = setup(["mlp", "cnn", "transformer"]);
    await registry.loadAll();
    const mlp = registry.models().find((m) => m.name === "mlp");
    if (!mlp) throw new Error("mlp missing");
    const before = await inferMlp(registry);
    expect(registry.weights.evictNow(mlp.ownerId)).toBe(true);
    expect(mlp.extra().resident).toBe(false);
    const after = await inferMlp(registry);
    expect(Array.from(after)).toEqual(Array.from(before));
    expect(mlp.extra().resident).toBe(true);
    expect(mlp.extra().weightLoads).toBeGreaterThanOrEqual(2);
  });

  test("a small budget keeps the most recently used models resident and evicts the least", async () => {
    // Size the limit so the pool holds mlp + cnn but not the transformer as well.
    const probeRun = setup(["mlp", "cnn", "transformer"]);
    await probeRun.registry.loadAll();
    const w = Object.fromEntries(probeRun.registry.models().map((m) => [m.name, m.weightBytes]));
    const maxScratch = probeRun.registry.currentBudget()?.maxScratchBytes ?? 0;
    probeRun.repo.cleanup();
    const limit = maxScratch + (w.mlp ?? 0) + (w.transformer ?? 0) + 10;
    const { registry, logs } = setup(["mlp", "cnn", "transformer"], { limitBytes: limit });
    await registry.loadAll();
    expect(registry.weights.residentOnDemandBytes).toBeLessThanOrEqual(registry.currentBudget()?.onDemandBytes ?? 0);
    const run = async (name: string) => {
      const m = registry.getModel(name);
      const spec = m?.inputs[0];
      if (!m || !spec) throw new Error(name);
      const ref = readReference(name).get(1);
      await m.infer({ inputs: ref?.inputs as Map<string, HostTensor> });
    };
    await run("mlp");
    await run("transformer");
    expect(registry.weights.lruOrder()).toEqual(["mlp", "transformer"]);
    await run("cnn"); // mlp is least recently used
    expect(registry.weights.lruOrder()).toEqual(["transformer", "cnn"]);
    await run("mlp"); // transformer goes
    expect(registry.weights.lruOrder()).toEqual(["cnn", "mlp"]);
    expect(logs.find("weights evicted").map((l) => l.model)).toContain("transformer");
    const extra = registry.getModel("transformer")?.extra() as Record<string, unknown>;
    expect(extra.resident).toBe(false);
    expect(extra.residency).toBe("device");
    expect((extra.budget as Record<string, number>).onDemandBytes).toBe(
      registry.currentBudget()?.onDemandBytes as number,
    );
  });

  test("a model whose weights alone exceed the pool is refused with the reason in the index", async () => {
    const { registry } = setup(["mlp", "cnn"], { limitBytes: 200_000 });
    await registry.loadAll();
    const index = Object.fromEntries(registry.repositoryIndex().map((e) => [e.name, e]));
    expect(index.cnn?.state).toBe("READY");
    expect(index.mlp?.state).toBe("UNAVAILABLE");
    expect(index.mlp?.reason).toContain("exceed the weight pool");
    expect(registry.getModel("mlp")).toBeUndefined();
  });

  // cnn's run scratch is large, mlp's weights are the larger: a limit whose pool holds mlp only
  // while cnn's scratch is not counted.
  const bigScratch = 2_000_000;
  const scratchFor = (b: string) => (b === "cnn" ? bigScratch : 10);
  /** Weights and measured scratch per model, from a registry without a limit. */
  async function figuresOf(): Promise<Record<string, { weights: number; scratch: number }>> {
    const { registry } = setup(["mlp", "cnn"], {}, true, { scratchPerRow: scratchFor });
    await registry.loadAll();
    const f = Object.fromEntries(
      registry.models().map((m) => [m.name, { weights: m.weightBytes, scratch: m.scratchBytes }]),
    );
    await registry.shutdown();
    cleanupRepo();
    return f;
  }

  for (const first of ["mlp", "cnn"])
    test(`startup refusals do not depend on load order (${first} finishes loading first)`, async () => {
      const f = await figuresOf();
      const [mlp, cnn, cnnScratch] = [f.mlp?.weights ?? 0, f.cnn?.weights ?? 0, f.cnn?.scratch ?? 0];
      expect(mlp).toBeGreaterThan(cnn);
      expect(cnnScratch).toBeGreaterThan(bigScratch);
      const limit = cnnScratch + Math.floor((mlp + cnn) / 2);
      const { registry, logs } = setup(["mlp", "cnn"], { limitBytes: limit }, true, {
        scratchPerRow: scratchFor,
        compileMs: (b) => (b === first ? 1 : 60),
      });
      await registry.loadAll();
      const index = Object.fromEntries(registry.repositoryIndex().map((e) => [e.name, e]));
      expect(index.cnn?.state).toBe("READY");
      expect(index.mlp?.state).toBe("UNAVAILABLE");
      expect(index.mlp?.reason).toContain("with every model's run scratch counted");
      expect(logs.find("model refused").map((l) => l.model)).toEqual(["mlp"]);
      const b = registry.currentBudget();
      expect(b?.maxScratchBytes).toBe(cnnScratch);
      for (const m of registry.models()) expect(m.weightBytes).toBeLessThanOrEqual(b?.onDemandBytes ?? 0);
    });

  test("a model loaded later whose scratch would squeeze out a serving model's weights is refused", async () => {
    const f = await figuresOf();
    const mlp = f.mlp?.weights ?? 0;
    const limit = (f.mlp?.scratch ?? 0) + mlp + bigScratch / 2; // mlp fits beside its own scratch, not cnn's
    const { registry, repo } = setup(["mlp"], { limitBytes: limit }, true, { scratchPerRow: scratchFor });
    await registry.loadAll();
    copyBundle("cnn", join(repo.repository, "cnn"));
    await expect(registry.load("cnn")).rejects.toThrow(
      /would shrink the weight pool .* too small for the weights of mlp/,
    );
    const index = Object.fromEntries(registry.repositoryIndex().map((e) => [e.name, e]));
    expect(index.mlp?.state).toBe("READY");
    expect(index.cnn?.state).toBe("UNAVAILABLE");
    expect(registry.currentBudget()?.maxScratchBytes).toBeLessThan(bigScratch);
    expect((await inferMlp(registry)).length).toBe(10);
  });

  test("pinned models count against the pool and are never evicted", async () => {
    const { registry } = setup(["mlp", "cnn"], { residency: { mlp: "pinned" } });
    await registry.loadAll();
    const b = registry.currentBudget();
    const mlp = registry.models().find((m) => m.name === "mlp");
    expect(b?.pinnedBytes).toBe(mlp?.weightBytes as number);
    expect(mlp?.extra().resident).toBe(true);
    expect(registry.weights.evictNow(mlp?.ownerId ?? "")).toBe(false);
  });
});

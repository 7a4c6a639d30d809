import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Executable, HostTensor } from "@xlaserve/core";
import type { ProgramSource } from "../src/model/runtime-model.ts";
import { type RegistryOptions, ModelRegistry } from "../src/repository/registry.ts";
import { RepositoryWatcher } from "../src/repository/watcher.ts";
import {
  type TempRepo,
  collectLogs,
  copyBundle,
  makeRepo,
  readReference,
  scaleWeights,
} from "../../../tests/e2e/helpers.ts";
import { FakeBackend, fakePrograms } from "./fake-backend.ts";

let repo: TempRepo | null = null;
afterEach(() => {
  repo?.cleanup();
  repo = null;
});

function setup(
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

const mlpInput = (): Map<string, HostTensor> => {
  const ref = readReference("mlp").get(1);
  if (!ref) throw new Error("no mlp b1 reference");
  return ref.inputs;
};

async function inferMlp(registry: ModelRegistry, name = "mlp"): Promise<Float32Array> {
  const model = registry.getModel(name);
  if (!model) throw new Error(`no model ${name}`);
  const out = await model.infer({ inputs: mlpInput() });
  return out.get("logits")?.data as Float32Array;
}

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
    repo?.cleanup();
    repo = null;
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

describe("watcher (fake engine)", () => {
  test("debounce: a change is acted on only after the same fingerprint is seen twice", async () => {
    const { registry, watcher, repo, programs } = setup(["mlp"]);
    await registry.loadAll();
    watcher.seed();
    await watcher.pollOnce();
    expect(watcher.actions).toEqual([]);
    scaleWeights(join(repo.repository, "mlp"), 2);
    await watcher.pollOnce(); // first sighting: pending
    expect(watcher.actions).toEqual([]);
    scaleWeights(join(repo.repository, "mlp"), 2); // still being written: a new fingerprint
    await watcher.pollOnce();
    expect(watcher.actions).toEqual([]);
    const calls = programs.calls.length;
    await watcher.pollOnce(); // same fingerprint twice: reload
    expect(watcher.actions.map((a) => a.kind)).toEqual(["reload"]);
    expect(programs.calls.length).toBe(calls + 2);
  });

  test("the worker's own .cache/ writes never trigger a reload", async () => {
    const { registry, watcher, repo } = setup(["mlp"]);
    await registry.loadAll();
    watcher.seed();
    const cacheDir = join(repo.repository, "mlp", ".cache", "partition");
    mkdirSync(cacheDir, { recursive: true });
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(cacheDir, `entry${i}.xprog`), `program ${i}`);
      writeFileSync(join(repo.repository, "mlp", ".cache", "mlir_hashes.json"), JSON.stringify({ i }));
      await watcher.pollOnce();
    }
    expect(watcher.actions).toEqual([]);
    expect(registry.getModel("mlp")).toBeDefined();
  });

  test("reload under load: no request fails, answers switch to the new version, budget re-resolved", async () => {
    const { registry, watcher, repo, backend, logs } = setup(["mlp"]);
    backend.execDelayMs = 1;
    await registry.loadAll();
    watcher.seed();
    const old = Array.from(await inferMlp(registry));
    let stop = false;
    let failures = 0;
    const seen: { sentAt: number; out: number[] }[] = [];
    const clients = [0, 1, 2, 3].map(async () => {
      while (!stop) {
        try {
          const sentAt = performance.now();
          seen.push({ sentAt, out: Array.from(await inferMlp(registry)) });
        } catch (err) {
          failures++;
          console.error(err);
        }
      }
    });
    scaleWeights(join(repo.repository, "mlp"), 3);
    await watcher.pollOnce();
    await watcher.pollOnce();
    const fresh = Array.from(await inferMlp(registry));
    const swappedAt = performance.now();
    await Bun.sleep(20);
    stop = true;
    await Promise.all(clients);
    expect(failures).toBe(0);
    expect(fresh).not.toEqual(old);
    expect(seen.some((s) => s.out[0] === old[0])).toBe(true);
    // Requests sent before the swap may still finish on the old version; every one sent after it
    // is answered by the new one.
    const after = seen.filter((s) => s.sentAt > swappedAt);
    expect(after.length).toBeGreaterThan(0);
    for (const s of after) expect(s.out).toEqual(fresh);
    expect(logs.find("weight budget resolved").map((l) => l.cause)).toEqual(["startup", "replace"]);
    await Bun.sleep(20);
    expect(registry.weights.residentOnDemandBytes).toBe(
      registry.getModel("mlp") ? (registry.models()[0]?.weightBytes ?? 0) : 0,
    );
  });

  test("a model's programs load side by side; when one fails, those that did load are freed", async () => {
    const build = (failing: string | null) => {
      repo?.cleanup();
      const loaded: Executable[] = [];
      let inFlight = 0;
      let most = 0;
      const { registry } = setup(["mlp"], {}, false, { compileMs: 40 }, (fake) => async (bundle, module) => {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          if (module.file === failing) {
            await Bun.sleep(80); // fails after the other program has loaded
            throw new Error(`${module.file} cannot be loaded`);
          }
          const p = await fake(bundle, module);
          loaded.push(p.executable);
          return p;
        } finally {
          inFlight--;
        }
      });
      return { registry, loaded, most: () => most };
    };
    const ok = build(null);
    await ok.registry.loadAll();
    expect(ok.most()).toBe(2); // b1 and b8 at once
    expect(ok.loaded.length).toBe(2);
    expect((await inferMlp(ok.registry)).length).toBe(10);

    const broken = build("model.b8.mlir");
    await broken.registry.loadAll();
    const entry = broken.registry.repositoryIndex().find((e) => e.name === "mlp");
    expect(entry?.state).toBe("UNAVAILABLE");
    expect(entry?.reason).toContain("model.b8.mlir cannot be loaded");
    expect(broken.loaded.length).toBe(1);
    expect((broken.loaded[0] as unknown as { disposed: boolean }).disposed).toBe(true);
  });

  test("a broken replacement leaves the old version serving with its error in the index", async () => {
    const { registry, watcher, repo } = setup(["mlp"]);
    await registry.loadAll();
    watcher.seed();
    const before = await inferMlp(registry);
    writeFileSync(join(repo.repository, "mlp", "model.b8.mlir"), "this is not MLIR");
    await watcher.pollOnce();
    await watcher.pollOnce();
    const entry = registry.repositoryIndex().find((e) => e.name === "mlp");
    expect(entry?.state).toBe("READY");
    expect(entry?.reason).toContain("reload failed");
    expect(Array.from(await inferMlp(registry))).toEqual(Array.from(before));
  });

  test("add and remove: the budget is re-resolved in place; a removed bundle is unloaded after draining", async () => {
    const { registry, watcher, repo, logs, backend } = setup(["mlp"]);
    await registry.loadAll();
    watcher.seed();
    const b0 = registry.currentBudget();
    copyBundle("cnn", join(repo.repository, "cnn"));
    await watcher.pollOnce();
    await watcher.pollOnce();
    expect(registry.loadedNames().sort()).toEqual(["cnn", "mlp"]);
    const b1 = registry.currentBudget();
    expect(b1?.maxScratchBytes).toBeGreaterThanOrEqual(b0?.maxScratchBytes ?? 0);
    const inUseWithCnn = backend.inUse;
    backend.execDelayMs = 30;
    const inflight = registry
      .getModel("cnn")
      ?.infer({ inputs: readReference("cnn").get(1)?.inputs as Map<string, HostTensor> });
    rmSync(join(repo.repository, "cnn"), { recursive: true });
    await watcher.pollOnce();
    await watcher.pollOnce();
    expect((await inflight)?.get("logits")?.shape).toEqual([1, 10]);
    expect(registry.loadedNames()).toEqual(["mlp"]);
    expect(registry.repositoryIndex().map((e) => e.name)).toEqual(["mlp"]);
    expect(backend.inUse).toBeLessThan(inUseWithCnn);
    expect(logs.find("weight budget resolved").map((l) => l.cause)).toEqual(["startup", "load", "remove"]);
  });

  test("rename: the model moves to its new name in place, nothing recompiled", async () => {
    const { registry, watcher, repo, programs } = setup(["mlp"]);
    await registry.loadAll();
    watcher.seed();
    const before = await inferMlp(registry);
    const compiles = programs.calls.length;
    renameSync(join(repo.repository, "mlp"), join(repo.repository, "mlp2"));
    await watcher.pollOnce();
    await watcher.pollOnce();
    expect(watcher.actions.map((a) => a.kind)).toEqual(["rename"]);
    expect(programs.calls.length).toBe(compiles);
    expect(registry.loadedNames()).toEqual(["mlp2"]);
    expect(registry.getModel("mlp")).toBeUndefined();
    expect(Array.from(await inferMlp(registry, "mlp2"))).toEqual(Array.from(before));
  });
});

describe("request coalescing (fake engine)", () => {
  test("concurrent requests share executions and each gets exactly its own rows", async () => {
    const { registry, backend } = setup(["mlp"]);
    await registry.loadAll();
    const model = registry.getModel("mlp");
    if (!model) throw new Error("no mlp");
    const x = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const rows = (start: number, n: number): Map<string, HostTensor> =>
      new Map([
        [
          "features",
          { dtype: "f32", shape: [n, 64], data: (x.data as Float32Array).slice(start * 64, (start + n) * 64) },
        ],
      ]);
    const requests = [
      [0, 1],
      [1, 2],
      [3, 3],
      [6, 1],
      [7, 1],
      [2, 4],
    ] as const;
    const solo: Map<string, HostTensor>[] = [];
    for (const [s, n] of requests) solo.push(await model.infer({ inputs: rows(s, n) }));
    backend.execDelayMs = 20;
    const before = model.stats();
    const together = await Promise.all(requests.map(([s, n]) => model.infer({ inputs: rows(s, n) })));
    const after = model.stats();
    together.forEach((out, i) => {
      const want = solo[i];
      expect(out.get("logits")?.shape).toEqual(want?.get("logits")?.shape as number[]);
      expect(Array.from(out.get("logits")?.data as Float32Array)).toEqual(
        Array.from(want?.get("logits")?.data as Float32Array),
      );
      expect(Array.from(out.get("probabilities")?.data as Float32Array)).toEqual(
        Array.from(want?.get("probabilities")?.data as Float32Array),
      );
    });
    expect(after.inferenceCount - before.inferenceCount).toBe(12);
    expect(after.executionCount - before.executionCount).toBeLessThan(requests.length);
  });
});

describe("without dynamic batching (the default)", () => {
  test("each request runs on its own batch size's program, whatever else is in flight", async () => {
    const { registry, backend } = setup(["mlp"], {}, false);
    await registry.loadAll();
    const model = registry.getModel("mlp");
    if (!model) throw new Error("no mlp");
    const x = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const one = (i: number): Map<string, HostTensor> =>
      new Map([
        ["features", { dtype: "f32", shape: [1, 64], data: (x.data as Float32Array).slice(i * 64, (i + 1) * 64) }],
      ]);
    backend.execDelayMs = 20;
    const before = model.stats();
    await Promise.all([0, 1, 2, 3].map((i) => model.infer({ inputs: one(i) })));
    const after = model.stats();
    expect(after.executionCount - before.executionCount).toBe(4);
  });
});

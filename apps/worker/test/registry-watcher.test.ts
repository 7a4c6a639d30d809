/** The repository watcher driving the registry: debounce, reloads under load, add, remove, rename (fake engine). */
import { describe, expect, test } from "bun:test";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Executable, HostTensor } from "@xlaserve/core";
import { copyBundle, readReference, scaleWeights } from "../../../tests/e2e/helpers.ts";
import { cleanupRepo, inferMlp, setup } from "./fake-registry.ts";
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
      cleanupRepo();
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

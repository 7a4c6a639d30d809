/**
 * A model's replica for the worker's other HTTP threads (http-threads/replica-model.ts), on the real CPU
 * engine: built from the registry model's spec it gives the engine thread's bytes at every batch
 * size, refuses a program whose answer differs, holds on while pinned, and reports its statistics.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { AbstractBackend, HostTensor } from "@xlaserve/core";
import { readReference } from "../../../tests/e2e/helpers.ts";
import { createFromSpec } from "../src/engine/backend-spec.ts";
import type { ReplicaSpec } from "../src/http-threads/protocol.ts";
import { ReplicaModel } from "../src/http-threads/replica-model.ts";
import { REPLICA_MAX_FACTOR } from "../src/model/runtime-model.ts";
import { cpuRegistry, disposeCpuRegistries, rowsOf, bytesOf } from "./cpu-registry.ts";

let twin: AbstractBackend | null = null;
afterEach(async () => {
  await twin?.dispose();
  twin = null;
  await disposeCpuRegistries();
});

async function mlpRegistry() {
  const { registry, backend } = await cpuRegistry(["mlp"], 5000);
  const mlp = registry.models()[0];
  if (!mlp) throw new Error("no mlp");
  return { registry, mlp, engineSpec: backend.spawnSpec ?? { module: "", export: "" } };
}

describe("a replica of the MLP on another thread's engine", () => {
  test("answers every batch size with the engine thread's bytes, and reports its statistics", async () => {
    const { registry, mlp, engineSpec } = await mlpRegistry();
    await mlp.prepareInline(5000);
    const spec = await mlp.replicaSpec(5000);
    if (!spec) throw new Error("no replica spec");
    expect(spec.programs.map((p) => p.batchSizes)).toEqual([[1], [8]]);
    expect(spec.maxRunUs).toBe(5000 * REPLICA_MAX_FACTOR);
    twin = await createFromSpec(engineSpec);
    const replica = await ReplicaModel.create(twin, spec);
    const ref8 = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    for (const rows of [1, 3, 8]) {
      const inputs = new Map([["features", rowsOf(ref8, rows)]]);
      const mine = await replica.infer({ inputs });
      const theirs = await mlp.infer({ inputs });
      for (const name of ["probabilities", "logits"]) {
        expect(mine.get(name)?.shape).toEqual([rows, 10]);
        expect(bytesOf(mine.get(name))).toEqual(bytesOf(theirs.get(name)));
      }
    }
    const delta = replica.takeDelta();
    expect(delta?.success.count).toBe(3);
    expect(delta?.inferenceCount).toBe(1 + 3 + 8);
    expect(delta?.executionCount).toBe(3);
    expect(replica.takeDelta()).toBeNull();
    // Added into the model's own figures on the main thread.
    const before = mlp.stats().success.count;
    if (delta) registry.addReplicaStats("mlp", mlp.generation, delta);
    expect(mlp.stats().success.count).toBe(before + 3);
    registry.addReplicaStats("mlp", mlp.generation + 1, delta ?? replica.stats()); // another version: ignored
    expect(mlp.stats().success.count).toBe(before + 3);
    // Pinned by a request, a dropped replica finishes it; then it is freed.
    replica.pin();
    replica.drop();
    expect(replica.ready()).toBe(true);
    await replica.infer({ inputs: new Map([["features", rowsOf(ref8, 1)]]) });
    replica.unpin();
    expect(replica.ready()).toBe(false);
    await expect(replica.infer({ inputs: new Map([["features", rowsOf(ref8, 1)]]) })).rejects.toThrow(/not loaded/);
    expect(twin.memoryStats().inUseBytes).toBe(0);
    await registry.shutdown();
  }, 60_000);

  test("a program whose answer differs is refused, and nothing stays allocated", async () => {
    const { registry, mlp, engineSpec } = await mlpRegistry();
    await mlp.prepareInline(5000);
    const spec = (await mlp.replicaSpec(5000)) as ReplicaSpec;
    const last = spec.programs.at(-1);
    if (!last) throw new Error("no program");
    const wrong = last.referenceOutputs.map((t) => ({ ...t, data: (t.data as Float32Array).map((x) => x + 1) }));
    twin = await createFromSpec(engineSpec);
    const tampered: ReplicaSpec = {
      ...spec,
      programs: [...spec.programs.slice(0, -1), { ...last, referenceOutputs: wrong }],
    };
    await expect(ReplicaModel.create(twin, tampered)).rejects.toThrow(/differs from the engine thread's/);
    expect(twin.memoryStats().inUseBytes).toBe(0);
    await registry.shutdown();
  }, 60_000);

  test("a model whose runs are far over the threshold gets no replica", async () => {
    const { registry, mlp } = await mlpRegistry();
    // Not timed yet: nothing to decide by.
    expect(await mlp.replicaSpec(5000)).toBeNull();
    const verdicts = (await mlp.prepareInline(5000)) ?? [];
    // The same timings against a threshold the runs exceed many times over.
    const tiny = Math.min(...verdicts.map((v) => v.engineUs ?? 0)) / (REPLICA_MAX_FACTOR * 4);
    expect(await mlp.replicaSpec(tiny)).toBeNull();
    await registry.shutdown();
  }, 60_000);
});

import { afterEach, describe, expect, test } from "bun:test";
import {
  type AbstractBackend,
  type DeviceBuffer,
  type Executable,
  type HostTensor,
  XlaserveError,
} from "@xlaserve/core";
import { readReference, waitFor } from "../../../tests/e2e/helpers.ts";
import { cpuRegistry, disposeCpuRegistries, rowsOf, bytesOf } from "./cpu-registry.ts";
import { type InlineCandidate, InlineRuns } from "../src/inline/inline-runs.ts";
import { settledNow } from "../src/inline/run-sync.ts";
import { INLINE_AFTER_REQUESTS } from "../src/model/runtime-model.ts";

afterEach(disposeCpuRegistries);

describe("inline runs on the real CPU engine", () => {
  test(`after ${INLINE_AFTER_REQUESTS} requests the MLP runs inline; every answer stays the same bytes`, async () => {
    const { registry, logs, backend } = await cpuRegistry(["mlp"], 5000);
    const mlp = registry.models()[0];
    if (!mlp) throw new Error("no mlp");
    const ref8 = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const cases = [1, 3, 8].map((rows) => new Map([["features", rowsOf(ref8, rows)]]));
    // Answers from the engine thread, before anything runs inline.
    const before = [];
    for (const inputs of cases) before.push(await mlp.infer({ inputs }));
    expect(mlp.extra().inline).toBeNull();
    for (let i = before.length; i < INLINE_AFTER_REQUESTS; i++)
      await mlp.infer({ inputs: cases[0] as Map<string, HostTensor> });
    await waitFor(() => logs.find("inline runs").length > 0);
    const inline = mlp.extra().inline as { maxUs: number; programs: Array<{ program: string; inline: boolean }> };
    expect(inline.maxUs).toBe(5000);
    expect(inline.programs.map((p) => [p.program, p.inline])).toEqual([
      ["b1", true],
      ["b8", true],
    ]);
    const executions = mlp.stats().executionCount;
    for (let k = 0; k < cases.length; k++) {
      const now = await mlp.infer({ inputs: cases[k] as Map<string, HostTensor> });
      for (const name of ["probabilities", "logits"]) {
        expect(now.get(name)?.shape).toEqual(before[k]?.get(name)?.shape);
        expect(bytesOf(now.get(name))).toEqual(bytesOf(before[k]?.get(name)));
      }
    }
    expect(mlp.stats().executionCount).toBe(executions + cases.length);
    // Evicted weights are loaded again through the engine as before; the answer is unchanged.
    const loads = mlp.extra().weightLoads as number;
    expect(registry.weights.evictNow(mlp.ownerId)).toBe(true);
    const again = await mlp.infer({ inputs: cases[2] as Map<string, HostTensor> });
    expect(mlp.extra().weightLoads).toBe(loads + 1);
    expect(bytesOf(again.get("logits"))).toEqual(bytesOf(before[2]?.get("logits")));
    await registry.shutdown();
    // The program copies and weights on this thread went with the model.
    expect((await backend.localTwin?.())?.memoryStats().inUseBytes).toBe(0);
  }, 60_000);

  test("a program over the threshold keeps running on the engine thread, with the reason", async () => {
    const { registry } = await cpuRegistry(["mlp"], 0.001);
    const mlp = registry.models()[0];
    const verdicts = await mlp?.prepareInline(0.001);
    expect(verdicts?.map((v) => v.inline)).toEqual([false, false]);
    expect(verdicts?.[0]?.reason).toContain("over the threshold");
    expect(mlp?.extra().inline).toBeNull();
    await registry.shutdown();
  }, 60_000);

  test("host residency and a threshold of 0 never run inline", async () => {
    const host = await cpuRegistry(["mlp"], 5000, "host");
    expect(await host.registry.models()[0]?.prepareInline(5000)).toBeNull();
    await host.registry.shutdown();
    const off = await cpuRegistry(["mlp"], 0);
    expect(await off.registry.models()[0]?.prepareInline(0)).toBeNull();
    await off.registry.shutdown();
  }, 60_000);

  test("a coalescing model runs inline too: the requests of one event-loop turn run as one execution", async () => {
    const { registry } = await cpuRegistry(["mlp"], 5000, "device", true);
    const mlp = registry.models()[0];
    if (!mlp) throw new Error("no mlp");
    const ref8 = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const alone = [];
    for (let r = 0; r < 5; r++) alone.push(await mlp.infer({ inputs: new Map([["features", sliceRow(ref8, r)]]) }));
    const verdicts = await mlp.prepareInline(5000);
    expect(verdicts?.map((v) => v.inline)).toEqual([true, true]);
    const before = mlp.queueFigures().executions;
    const together = await Promise.all(
      Array.from({ length: 5 }, (_, r) => mlp.infer({ inputs: new Map([["features", sliceRow(ref8, r)]]) })),
    );
    // Five requests submitted in one turn: one inline execution (b8, padded), each its own row back.
    expect(mlp.queueFigures().executions).toBe(before + 1);
    const inline = mlp.extra().inline as { programs: Array<{ program: string; inline: boolean }> };
    expect(inline.programs.find((p) => p.program === "b8")?.inline).toBe(true);
    for (const [r, out] of together.entries()) {
      expect(out.get("logits")?.shape).toEqual([1, 10]);
      // A row's answer at b8 may differ from its b1 answer in the last bits (batch invariance).
      const a = out.get("logits")?.data as Float32Array;
      const b = alone[r]?.get("logits")?.data as Float32Array;
      for (let i = 0; i < 10; i++) expect(Math.abs((a[i] as number) - (b[i] as number))).toBeLessThan(1e-5);
    }
    await registry.shutdown();
  }, 60_000);

  test("shutdown during a preparation stops it and frees what it held on this thread", async () => {
    const { registry, backend: be } = await cpuRegistry(["mlp"], 5000);
    const preparing = registry.models()[0]?.prepareInline(5000);
    await registry.shutdown();
    await preparing;
    const twin = await be.localTwin?.();
    expect(twin?.memoryStats().inUseBytes).toBe(0);
  }, 60_000);

  test("the engine thread times a program run after run", async () => {
    const { registry, backend: be } = await cpuRegistry(["mlp"], 0);
    const mlp = registry.models()[0];
    if (!mlp) throw new Error("no mlp");
    const { program } = mlp.programFor(null, 1);
    const weights = await registry.weights.acquire(mlp.ownerId);
    const x: HostTensor = { dtype: "f32", shape: [1, 64], data: new Float32Array(64) };
    const us = await be.timeRuns(program.executable, [x], weights.buffers, 25, 1000);
    weights.release();
    expect(us.length).toBe(25);
    for (const u of us) expect(u).toBeGreaterThan(0);
    await registry.shutdown();
  }, 60_000);
});

/** A synchronous stand-in engine: y = x + w, each run taking about `runUs`. */
class SyncEngine implements Partial<AbstractBackend> {
  runUs = 0;
  failWith: Error | null = null;
  live = 0;
  async upload(t: HostTensor): Promise<DeviceBuffer> {
    return this.buffer(t);
  }
  private buffer(t: HostTensor): DeviceBuffer {
    this.live++;
    const data = t.data.slice();
    return {
      dtype: t.dtype,
      shape: [...t.shape],
      byteLength: data.byteLength,
      device: 0,
      dispose: () => {
        this.live--;
      },
      [Symbol.dispose]() {},
      data,
    } as DeviceBuffer & { data: Float32Array };
  }
  async download(b: DeviceBuffer): Promise<HostTensor> {
    return { dtype: b.dtype, shape: [...b.shape], data: (b as DeviceBuffer & { data: Float32Array }).data.slice() };
  }
  async execute(_e: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    if (this.failWith) throw this.failWith;
    const until = performance.now() + this.runUs / 1000;
    while (performance.now() < until) {}
    const [x, w] = args as Array<DeviceBuffer & { data: Float32Array }>;
    const y = (x as { data: Float32Array }).data.map((v, i) => v + ((w as { data: Float32Array }).data[i] as number));
    return [this.buffer({ dtype: "f32", shape: [...(x as DeviceBuffer).shape], data: y })];
  }
  async serialize(): Promise<Uint8Array> {
    return new Uint8Array(1);
  }
  programs = 0;
  async deserialize(): Promise<Executable> {
    this.programs++;
    return {
      outputCount: 1,
      dispose: () => {
        this.programs--;
      },
      [Symbol.dispose]() {},
    };
  }
}

async function syncRuns(engine: SyncEngine, maxUs: number) {
  const exe: Executable = { outputCount: 1, dispose() {}, [Symbol.dispose]() {} };
  const x: HostTensor = { dtype: "f32", shape: [4], data: Float32Array.from([1, 2, 3, 4]) };
  const w: HostTensor = { dtype: "f32", shape: [4], data: Float32Array.from([10, 20, 30, 40]) };
  const candidate: InlineCandidate = {
    label: "b1",
    executable: exe,
    inputs: [x],
    probeMs: 0.1,
    engineTimes: async (n) => Array.from({ length: Math.min(n, 50) }, () => 1),
    reference: async () => [{ dtype: "f32", shape: [4], data: Float32Array.from([11, 22, 33, 44]) }],
  };
  const be = engine as unknown as AbstractBackend;
  const { runs, verdicts } = await InlineRuns.prepare(be, be, [candidate], [w], maxUs, () => true);
  return { runs, verdicts, exe, x };
}

describe("inline runs (stand-in engine)", () => {
  test("a program whose runs drift past 4x the threshold goes back to the engine thread, said once", async () => {
    const engine = new SyncEngine();
    const { runs, exe, x } = await syncRuns(engine, 200);
    if (!runs) throw new Error("not inline");
    const program = runs.get(exe);
    if (!program) throw new Error("no program");
    const drifted: string[] = [];
    runs.onDrift = (label) => drifted.push(label);
    // Slow runs now and then (a GC pause, a preempted run) do not count against it.
    engine.runUs = 1000;
    for (let i = 0; i < 64 * 3; i++) {
      engine.runUs = i % 4 === 0 ? 1000 : 0;
      expect(Array.from(runs.run(exe, program, [x])[0]?.data as Float32Array)).toEqual([11, 22, 33, 44]);
    }
    expect(runs.get(exe)).toBe(program);
    // Two windows in a row of mostly slow runs do.
    engine.runUs = 1000;
    for (let i = 0; i < 64 * 2; i++) runs.run(exe, program, [x]);
    expect(runs.get(exe)).toBeUndefined();
    expect(drifted).toEqual(["b1"]);
    expect(engine.programs).toBe(1);
    runs.dispose();
    expect(engine.live).toBe(0);
    expect(engine.programs).toBe(0);
  });

  test("a run that throws fails with the engine's error and frees its buffers", async () => {
    const engine = new SyncEngine();
    const { runs, exe, x } = await syncRuns(engine, 1_000_000);
    const program = runs?.get(exe);
    if (!runs || !program) throw new Error("not inline");
    const live = engine.live;
    engine.failWith = new XlaserveError("EXECUTE_FAILED", "execution failed: boom");
    expect(() => runs.run(exe, program, [x])).toThrow("execution failed: boom");
    expect(engine.live).toBe(live);
    runs.dispose();
    expect(engine.live).toBe(0);
  });

  test("an answer that differs from the engine thread's is never run inline", async () => {
    const engine = new SyncEngine();
    const exe: Executable = { outputCount: 1, dispose() {}, [Symbol.dispose]() {} };
    const x: HostTensor = { dtype: "f32", shape: [4], data: Float32Array.from([1, 2, 3, 4]) };
    const w: HostTensor = { dtype: "f32", shape: [4], data: Float32Array.from([10, 20, 30, 40]) };
    const be = engine as unknown as AbstractBackend;
    const { runs, verdicts } = await InlineRuns.prepare(
      be,
      be,
      [
        {
          label: "b1",
          executable: exe,
          inputs: [x],
          probeMs: null,
          engineTimes: async () => [1, 1, 1],
          // One ulp off in the last element.
          reference: async () => [{ dtype: "f32", shape: [4], data: Float32Array.from([11, 22, 33, 44.000004]) }],
        },
      ],
      [w],
      1_000_000,
      () => true,
    );
    expect(runs).toBeNull();
    expect(verdicts[0]?.reason).toBe("its answer differs from the engine thread's");
    expect(engine.live).toBe(0);
    expect(engine.programs).toBe(0);
  });

  test("a long probe run or a slow engine-thread time is never tried on this thread", async () => {
    const engine = new SyncEngine();
    let localRuns = 0;
    const original = engine.execute.bind(engine);
    engine.execute = (e, a) => {
      localRuns++;
      return original(e, a);
    };
    const exe: Executable = { outputCount: 1, dispose() {}, [Symbol.dispose]() {} };
    const base = {
      executable: exe,
      inputs: [{ dtype: "f32", shape: [4], data: new Float32Array(4) } as HostTensor],
      reference: async () => [],
    };
    const be = engine as unknown as AbstractBackend;
    const { runs, verdicts } = await InlineRuns.prepare(
      be,
      be,
      [
        { ...base, label: "long probe", probeMs: 500, engineTimes: async () => [1] },
        { ...base, label: "slow engine", probeMs: 1, engineTimes: async () => [900, 900, 900] },
      ],
      [],
      50,
      () => true,
    );
    expect(runs).toBeNull();
    expect(verdicts.map((v) => v.reason)).toEqual([
      "its probe run took 500 ms",
      "over the threshold on the engine thread",
    ]);
    expect(localRuns).toBe(0);
  });
});

describe("settledNow", () => {
  test("reads a settled promise now and refuses a pending one", async () => {
    expect(settledNow(Promise.resolve(7))).toBe(7);
    const err = new XlaserveError("EXECUTE_FAILED", "nope");
    expect(() => settledNow(Promise.reject(err))).toThrow(err);
    const pending = new Promise<number>(() => {});
    expect(() => settledNow(pending)).toThrow("did not compute synchronously");
    await Bun.sleep(1); // no unhandled rejection surfaces from the rejected one
  });
});

/** Row `r` of a row-major [N, C] tensor as a [1, C] tensor. */
function sliceRow(x: HostTensor, r: number): HostTensor {
  const c = x.shape[1] as number;
  return { dtype: x.dtype, shape: [1, c], data: (x.data as Float32Array).slice(r * c, (r + 1) * c) };
}

import { beforeAll, describe, expect, test } from "bun:test";
import { type HostTensor, uploadAll } from "@xlaserve/core";
import { buildMock, mockControls } from "../../../packages/backend-pjrt/test/support/build-mock.ts";
import { DESTROYS } from "../../../packages/backend-pjrt/test/support/loads.ts";
import { ThreadedBackend } from "../src/engine-thread/threaded-backend.ts";

const f32 = (values: number[]): HostTensor => ({
  dtype: "f32",
  shape: [values.length],
  data: new Float32Array(values),
});
const MODULE = { bytes: new TextEncoder().encode("module @m { func.func @main() }"), format: "text" as const };

/** The PJRT backend hosted on an engine thread, created with these backend options. */
const pjrtOnEngineThread = (args: Record<string, unknown>) =>
  ThreadedBackend.create({ module: "@xlaserve/backend-pjrt", export: "createPjrtBackend", args });

let path: string;
let mock: ReturnType<typeof mockControls>;
beforeAll(() => {
  path = buildMock("ok");
  mock = mockControls(path);
});

// The worker hosts PJRT on the engine thread (apps/worker/src/engine.ts): plugin calls, event
// callbacks from the plugin's own threads, and the batched request path all run inside a Worker.
describe("the PJRT backend on the engine thread (mock plugin)", () => {
  for (const eventWait of ["auto", "callback"] as const) {
    test(`loads, uploads weights together, runs requests concurrently (events: ${eventWait})`, async () => {
      const be = await pjrtOnEngineThread({
        pluginPath: path,
        isolateCompile: false,
        eventWait,
        pluginFileHash: "0123456789abcdef",
      });
      const own = mock.newestClient();
      try {
        // the hash handed over is the one the identity names (no re-hash of the plugin file)
        expect(be.identity().buildId).toBe("mock-xla-1+0123456789abcdef");
        // inline runs (a second instance on the HTTP thread) are for the CPU engine only: PJRT
        // offers none, and computes asynchronously
        expect(be.localTwin).toBeUndefined();
        expect(be.serialCompute).toBe(false);
        const weights = await uploadAll(be, [f32([10, 20, 30]), f32([1, 1, 1]), f32([5, 5, 5])]);
        const exe = await be.compile(MODULE, {});
        const answers = await Promise.all([1, 2, 3, 4].map((x) => be.run(exe, [f32([x, x, x])], [weights[0]!])));
        answers.forEach((outs, i) => {
          const x = i + 1;
          expect(Array.from(outs[0]!.data as Float32Array)).toEqual([10 + x, 20 + x, 30 + x]);
          expect(Array.from(outs[1]!.data as Int32Array)).toEqual([2]);
        });
        for (const w of weights) w.dispose();
        exe.dispose();
        await be.refreshMemoryStats();
      } finally {
        await be.dispose();
      }
      expect(own.buffers()).toBe(0);
      expect(own.executables()).toBe(0);
      expect(mock.liveEvents()).toBe(0);
    });
  }

  test("a compile or a program load in progress holds up no other program's requests", async () => {
    const be = await pjrtOnEngineThread({ pluginPath: path, isolateCompile: true, pluginFileHash: "0123456789abcdef" });
    try {
      const fast = await be.compile(MODULE, {});
      // The mock sleeps this long in compile (here in the compile child) and in every load.
      const slowText = "module @slow { func.func @main() } // mock.sleep_ms=1500";
      const slowProgram = new TextEncoder().encode(`MOCKEXEC:${slowText}`);
      const settledAt: Record<string, number> = {};
      const t0 = performance.now();
      const compiling = be
        .compile({ bytes: new TextEncoder().encode(slowText), format: "text" }, {})
        .finally(() => (settledAt.compile = performance.now() - t0));
      const loading = be.deserialize(slowProgram, {}).finally(() => (settledAt.load = performance.now() - t0));
      const answeredAt: number[] = [];
      for (let i = 0; i < 5; i++) {
        const outs = await be.run(fast, [f32([i, i])], []);
        expect(Array.from(outs[1]!.data as Int32Array)).toEqual([1]);
        answeredAt.push(performance.now() - t0);
      }
      const [compiled, loaded] = await Promise.all([compiling, loading]);
      // Every request was answered while both were still running.
      expect(Math.max(...answeredAt)).toBeLessThan(Math.min(settledAt.compile!, settledAt.load!));
      expect(settledAt.load!).toBeGreaterThanOrEqual(1400);
      // and what they produced works
      for (const exe of [compiled, loaded]) {
        const outs = await be.run(exe, [f32([2, 3])], []);
        expect(Array.from(outs[0]!.data as Float32Array)).toEqual([2, 3]);
        exe.dispose();
      }
      fast.dispose();
    } finally {
      await be.dispose();
    }
  }, 20_000);

  test("settling waits for a hedged load's spare copies on the engine thread, holding up no request", async () => {
    const be = await pjrtOnEngineThread({ pluginPath: path, isolateCompile: false, loadThreads: 4, hedgeLoads: 3 });
    try {
      const fast = await be.compile(MODULE, {});
      // Loads sleep in the order they start: the first copy answers, three spares run on.
      mock.resetLoadSleeps();
      const program = new TextEncoder().encode(
        "MOCKEXEC:module @h { func.func @main() } // mock.load_sleeps=10,1500,1500,1500",
      );
      const t0 = performance.now();
      const loaded = await be.deserialize(program, {});
      expect(performance.now() - t0).toBeLessThan(1000);
      const destroyed = mock.calls(DESTROYS);
      let settledAt = 0;
      const settling = be.settleBackground().then(() => (settledAt = performance.now() - t0));
      const outs = await be.run(fast, [f32([1, 2])], []);
      expect(Array.from(outs[0]!.data as Float32Array)).toEqual([1, 2]);
      const answeredAt = performance.now() - t0;
      await settling;
      expect(answeredAt).toBeLessThan(settledAt);
      expect(settledAt).toBeGreaterThanOrEqual(1450);
      expect(mock.calls(DESTROYS) - destroyed).toBe(3);
      loaded.dispose();
      fast.dispose();
    } finally {
      await be.dispose();
    }
  }, 20_000);

  test("disposing while a compile is still running fails that compile instead of leaving it waiting", async () => {
    const be = await pjrtOnEngineThread({ pluginPath: path, isolateCompile: true, pluginFileHash: "0123456789abcdef" });
    const slowText = "module @slow { func.func @main() } // mock.sleep_ms=3000";
    const compiling = be.compile({ bytes: new TextEncoder().encode(slowText), format: "text" }, {});
    const settled = compiling.then(
      () => "compiled",
      (e: unknown) => (e as { code?: string }).code ?? String(e),
    );
    await Bun.sleep(100);
    const t0 = performance.now();
    await be.dispose();
    expect(await settled).toBe("DISPOSED");
    expect(performance.now() - t0).toBeLessThan(2000);
  }, 20_000);

  test("a plugin that fails the gate fails creation with its own code", async () => {
    await expect(
      pjrtOnEngineThread({ pluginPath: buildMock("wrong_major"), isolateCompile: false }),
    ).rejects.toMatchObject({ code: "PLUGIN_VERSION_MISMATCH" });
  });
});

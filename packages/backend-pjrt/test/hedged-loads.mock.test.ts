import { beforeAll, describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import { type PjrtBackend, type PjrtBackendOptions, createPjrtBackend } from "../src/backend.ts";
import { buildMock, mockControls } from "./support/build-mock.ts";
import { DESTROYS, LOADS, f32, outcome, text } from "./support/loads.ts";

const SLOW_MS = 600;
const FAST_MS = 30;
/** Long enough for the copies to have started (a turn of the event loop) before a load fails. */
const FAIL_MS = 100;

let path: string;
let mock: ReturnType<typeof mockControls>;
/** Loads sleep SLOW, FAST, SLOW, SLOW ms in the order they start: the second copy is the fast one. */
let secondFast: Uint8Array;
/** Every load sleeps SLOW_MS. */
let slow: Uint8Array;
/** The first load fails after FAIL_MS, the next three load after SLOW_MS. */
let firstFails: Uint8Array;
/** Every load fails, after FAIL_MS. */
let allFail: Uint8Array;

function backendWith(options: Partial<PjrtBackendOptions> = {}): PjrtBackend {
  return createPjrtBackend({ pluginPath: path, isolateCompile: false, loadThreads: 4, ...options });
}

/**
 * A backend giving each load up to three extra copies, its loader threads ready; its own mock
 * counts, and the plugin's load count before any of its loads.
 */
async function hedged(): Promise<{
  backend: PjrtBackend;
  own: ReturnType<ReturnType<typeof mockControls>["newestClient"]>;
  loads: number;
}> {
  const backend = backendWith({ hedgeLoads: 3 });
  const own = mock.newestClient();
  await backend.loadersReady();
  return { backend, own, loads: mock.calls(LOADS) };
}

/** Waits until the plugin has seen `n` more loads than `from`, or 3 s. */
async function loadsStarted(from: number, n: number): Promise<number> {
  for (let i = 0; i < 300 && mock.calls(LOADS) - from < n; i++) await Bun.sleep(10);
  return mock.calls(LOADS) - from;
}

beforeAll(async () => {
  path = buildMock("ok");
  mock = mockControls(path);
  const compiler = backendWith({ loadThreads: 0 });
  const serialized = async (source: string) => {
    const exe = await compiler.compile({ bytes: text(source), format: "text" }, {});
    const bytes = await compiler.serialize(exe);
    exe.dispose();
    return bytes;
  };
  secondFast = await serialized(`module @hedged { mock.load_sleeps=${SLOW_MS},${FAST_MS},${SLOW_MS},${SLOW_MS} }`);
  slow = await serialized(`module @slow { mock.sleep_ms=${SLOW_MS} }`);
  firstFails = await serialized(`module @ff { mock.load_sleeps=!${FAIL_MS},${SLOW_MS},${SLOW_MS},${SLOW_MS} }`);
  allFail = await serialized(`module @af { mock.load_sleeps=!${FAIL_MS} }`);
  await compiler.dispose();
});

describe("hedged loads (mock plugin)", () => {
  test("a lone load runs as copies on the idle threads; the first loaded is kept, the others destroyed as they finish", async () => {
    const { backend, own, loads } = await hedged();
    mock.resetLoadSleeps();
    const t0 = performance.now();
    const exe = await backend.deserialize(secondFast, {});
    const ms = performance.now() - t0;
    // the fast copy answered; without copies the load takes SLOW_MS
    expect(ms).toBeLessThan(SLOW_MS / 2);
    expect(mock.calls(LOADS) - loads).toBe(4);
    // settling waits for the three slow copies: finished and destroyed, the kept program left
    // (its loaded executable and the executable it is read through)
    const destroyed = mock.calls(DESTROYS);
    await backend.settleBackground();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(SLOW_MS);
    expect(mock.calls(DESTROYS) - destroyed).toBe(3);
    expect(own.executables()).toBe(2);
    // the kept program runs
    const weight = await backend.upload(f32([1, 2]));
    const x = await backend.upload(f32([10, 20]));
    const [sum, count] = await backend.execute(exe, [x, weight]);
    expect(Array.from((await backend.download(sum!)).data as Float32Array)).toEqual([11, 22]);
    for (const b of [x, weight, sum!, count!]) b.dispose();
    exe.dispose();
    expect(own.executables()).toBe(0);
    // with nothing running on the side, settling is immediate
    const t1 = performance.now();
    await backend.settleBackground();
    expect(performance.now() - t1).toBeLessThan(SLOW_MS / 2);
    await backend.dispose();
  });

  /** A lone load of `secondFast`: its ms and how many loads the plugin saw. */
  async function loneLoad(options: Partial<PjrtBackendOptions>): Promise<{ ms: number; loads: number }> {
    const backend = backendWith(options);
    await backend.loadersReady();
    const loads = mock.calls(LOADS);
    mock.resetLoadSleeps();
    const t0 = performance.now();
    const exe = await backend.deserialize(secondFast, {});
    const ms = performance.now() - t0;
    exe.dispose();
    await backend.dispose();
    return { ms, loads: mock.calls(LOADS) - loads };
  }

  test("by default a lone load gets one extra copy", async () => {
    const { ms, loads } = await loneLoad({});
    expect(ms).toBeLessThan(SLOW_MS / 2);
    expect(loads).toBe(2);
  });

  test("hedgeLoads 0 runs one copy", async () => {
    const { ms, loads } = await loneLoad({ hedgeLoads: 0 });
    expect(ms).toBeGreaterThanOrEqual(SLOW_MS);
    expect(loads).toBe(1);
  });

  test("loads asked for together each get a thread before any copy does", async () => {
    const { backend, loads } = await hedged();
    mock.resetMaxConcurrentLoads();
    const exes = await Promise.all([1, 2, 3, 4].map(() => backend.deserialize(slow, {})));
    expect(mock.calls(LOADS) - loads).toBe(4);
    expect(mock.maxConcurrentLoads()).toBe(4);
    // two loads leave two threads idle: one copy each
    const two = await Promise.all([1, 2].map(() => backend.deserialize(slow, {})));
    expect(await loadsStarted(loads, 8)).toBe(8);
    for (const e of [...exes, ...two]) e.dispose();
    await backend.dispose();
  });

  test("a copy that fails does not fail the load while another copy may still load it", async () => {
    const { backend, loads } = await hedged();
    const errors = mock.liveErrors();
    mock.resetLoadSleeps();
    const exe = await backend.deserialize(firstFails, {});
    expect(exe.outputCount).toBe(2);
    expect(mock.calls(LOADS) - loads).toBe(4);
    exe.dispose();
    await backend.dispose();
    expect(mock.liveErrors()).toBe(errors);
  });

  test("a load fails once, with the error a single copy gives, when every copy failed", async () => {
    const { backend, own, loads } = await hedged();
    const errors = mock.liveErrors();
    const failure = await outcome(backend.deserialize(allFail, {}));
    expect(isXlaserveError(failure, "PJRT_ERROR")).toBe(true);
    expect((failure as Error).message).toContain("this load's turn fails");
    // answered only after the last copy failed
    expect(mock.calls(LOADS) - loads).toBe(4);
    expect(mock.liveErrors()).toBe(errors);
    expect(own.executables()).toBe(0);
    // a program the plugin refuses at once fails before any copy starts: still one typed error
    const corrupt = await outcome(backend.deserialize(new Uint8Array([1, 2, 3]), {}));
    expect(isXlaserveError(corrupt, "PJRT_ERROR")).toBe(true);
    expect((corrupt as Error).message).toContain("not a serialized mock executable (3 bytes)");
    await backend.dispose();
    expect(mock.liveErrors()).toBe(errors);
  });

  test("dispose while copies still run waits for them and destroys what they load", async () => {
    const { backend, own, loads } = await hedged();
    const pending = outcome(backend.deserialize(slow, {}));
    expect(await loadsStarted(loads, 4)).toBe(4);
    await backend.dispose();
    expect(isXlaserveError(await pending, "DISPOSED")).toBe(true);
    expect(own.executables()).toBe(0);
  });

  test("a hedge that is not an integer >= 0 is CONFIG_INVALID", () => {
    expect(() => backendWith({ hedgeLoads: -1 })).toThrow(/hedgeLoads must be an integer >= 0/);
  });
});

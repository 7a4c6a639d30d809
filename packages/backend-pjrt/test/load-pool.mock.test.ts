import { beforeAll, describe, expect, test } from "bun:test";
import { type Executable, isXlaserveError } from "@xlaserve/core";
import { type PjrtBackend, type PjrtBackendOptions, createPjrtBackend } from "../src/backend.ts";
import { LoadPool } from "../src/runtime/load-pool.ts";
import { buildMock, mockControls } from "./support/build-mock.ts";
import { LOADS, f32, outcome, text } from "./support/loads.ts";

const SLEEP_MS = 300;

let path: string;
let mock: ReturnType<typeof mockControls>;
/** Serialized programs: one that loads at once, one whose every load sleeps SLEEP_MS in the plugin. */
let quick: Uint8Array;
let slow: Uint8Array;

/** Without hedged copies (hedged-loads.mock.test.ts has those): these tests count loads. */
function backendWith(options: Partial<PjrtBackendOptions> = {}): PjrtBackend {
  return createPjrtBackend({ pluginPath: path, isolateCompile: false, hedgeLoads: 0, ...options });
}

beforeAll(async () => {
  path = buildMock("ok");
  mock = mockControls(path);
  const compiler = backendWith({ loadThreads: 0 });
  for (const [name, source] of [
    ["quick", "module @quick {}"],
    ["slow", `module @slow { mock.sleep_ms=${SLEEP_MS} }`],
  ] as const) {
    const exe = await compiler.compile({ bytes: text(source), format: "text" }, {});
    const bytes = await compiler.serialize(exe);
    exe.dispose();
    if (name === "quick") quick = bytes;
    else slow = bytes;
  }
  await compiler.dispose();
});

describe("program loads on loader threads (mock plugin)", () => {
  test("the threads start with the backend and map in the plugin's code and their arena first", async () => {
    const backend = backendWith({ loadThreads: 2 });
    try {
      await backend.loadersReady();
      const reports = backend.loaderReports as {
        code: { mappings: number; refused: number } | null;
        heapBytes: number;
      }[];
      expect(reports.length).toBe(2);
      // every thread its own arena; the plugin's code once, by the first thread
      for (const r of reports) expect(r.heapBytes).toBe(16 << 20);
      const withCode = reports.filter((r) => r.code !== null);
      expect(withCode.length).toBe(1);
      expect(withCode[0]!.code!.mappings).toBeGreaterThanOrEqual(1);
      const exe = await backend.deserialize(quick, {});
      expect(exe.outputCount).toBe(2);
      exe.dispose();
    } finally {
      await backend.dispose();
    }
    const plain = backendWith({ loadThreads: 1, prefaultLoads: false });
    try {
      await plain.loadersReady();
      expect(plain.loaderReports).toEqual([expect.objectContaining({ code: null, heapBytes: 0 })]);
    } finally {
      await plain.dispose();
    }
  });

  test("loads run off the calling thread, into the calling thread's client", async () => {
    const backend = backendWith();
    const off = mock.loadsOffClientThread();
    const loads = mock.calls(LOADS);
    const exe = await backend.deserialize(quick, {});
    expect(mock.calls(LOADS) - loads).toBe(1);
    expect(mock.loadsOffClientThread() - off).toBe(1);
    expect(exe.outputCount).toBe(2);
    exe.dispose();
    await backend.dispose();
  });

  test("with loadThreads 0 loads stay on the calling thread", async () => {
    const backend = backendWith({ loadThreads: 0 });
    const off = mock.loadsOffClientThread();
    const loads = mock.calls(LOADS);
    const exes = await Promise.all([1, 2, 3].map(() => backend.deserialize(quick, {})));
    expect(mock.calls(LOADS) - loads).toBe(3);
    expect(mock.loadsOffClientThread()).toBe(off);
    for (const e of exes) e.dispose();
    await backend.dispose();
  });

  test("loads on several threads overlap", async () => {
    const backend = backendWith({ loadThreads: 4 });
    let t0 = performance.now();
    const first = await backend.deserialize(slow, {});
    const oneMs = performance.now() - t0;
    mock.resetMaxConcurrentLoads();
    t0 = performance.now();
    const four = await Promise.all([1, 2, 3, 4].map(() => backend.deserialize(slow, {})));
    const fourMs = performance.now() - t0;
    expect(mock.maxConcurrentLoads()).toBeGreaterThanOrEqual(2);
    expect(oneMs).toBeGreaterThanOrEqual(SLEEP_MS);
    expect(fourMs).toBeGreaterThanOrEqual(SLEEP_MS);
    // One after the other they would take 4x one load.
    expect(fourMs).toBeLessThan(2 * oneMs);
    for (const e of [first, ...four]) e.dispose();
    await backend.dispose();
  });

  test("no more loads run at once than there are threads; the others wait their turn", async () => {
    const backend = backendWith({ loadThreads: 2 });
    mock.resetMaxConcurrentLoads();
    const t0 = performance.now();
    const exes = await Promise.all([1, 2, 3, 4].map(() => backend.deserialize(slow, {})));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2 * SLEEP_MS);
    expect(mock.maxConcurrentLoads()).toBe(2);
    for (const e of exes) e.dispose();
    await backend.dispose();
  });

  test("programs loaded on threads run and give the expected outputs", async () => {
    const backend = backendWith();
    const own = mock.newestClient();
    const exes = await Promise.all([1, 2, 3].map(() => backend.deserialize(quick, {})));
    const weight = await backend.upload(f32([10, 20, 30]));
    for (const [i, exe] of exes.entries()) {
      const x = await backend.upload(f32([i, i, i]));
      const [sum, count] = await backend.execute(exe, [x, weight]);
      expect(Array.from((await backend.download(sum!)).data as Float32Array)).toEqual([10 + i, 20 + i, 30 + i]);
      expect(Array.from((await backend.download(count!)).data as Int32Array)).toEqual([2]);
      for (const b of [x, sum!, count!]) b.dispose();
      exe.dispose();
    }
    weight.dispose();
    await backend.dispose();
    expect(own.buffers()).toBe(0);
    expect(own.executables()).toBe(0);
  });

  test("a corrupt program gives the same typed error as a load on the calling thread", async () => {
    const corrupt = new Uint8Array([1, 2, 3]);
    const errors = mock.liveErrors();
    const failures: unknown[] = [];
    for (const loadThreads of [0, 2]) {
      const backend = backendWith({ loadThreads });
      const own = mock.newestClient();
      failures.push(await outcome(backend.deserialize(corrupt, {})));
      await backend.dispose();
      expect(own.executables()).toBe(0);
    }
    const [here, threaded] = failures;
    expect(isXlaserveError(here, "PJRT_ERROR")).toBe(true);
    expect(isXlaserveError(threaded, "PJRT_ERROR")).toBe(true);
    const a = here as { message: string; details: unknown };
    const b = threaded as { message: string; details: unknown };
    expect(b.message).toBe(a.message);
    expect(b.message).toContain("not a serialized mock executable (3 bytes)");
    expect(b.details).toEqual(a.details);
    // the PJRT_Error was destroyed on the thread that received it
    expect(mock.liveErrors()).toBe(errors);
  });

  test("dispose during loads waits for the running ones, destroys what they load, and refuses the rest", async () => {
    const backend = backendWith({ loadThreads: 2 });
    const own = mock.newestClient();
    const loads = mock.calls(LOADS);
    const pending = [1, 2, 3, 4].map((): Promise<Executable | unknown> => outcome(backend.deserialize(slow, {})));
    for (let i = 0; i < 200 && mock.calls(LOADS) - loads < 2; i++) await Bun.sleep(5);
    expect(mock.calls(LOADS) - loads).toBe(2);
    await backend.dispose();
    const results = await Promise.all(pending);
    for (const r of results) expect(isXlaserveError(r, "DISPOSED")).toBe(true);
    // the two waiting loads never reached the plugin; the two running ones were destroyed
    expect(mock.calls(LOADS) - loads).toBe(2);
    expect(own.executables()).toBe(0);
    await expect(backend.deserialize(quick, {})).rejects.toMatchObject({ code: "DISPOSED" });
  });

  test("idle loader threads do not keep the process alive; a hedged copy still running does until it ends", {
    timeout: 30_000,
  }, async () => {
    const child = Bun.spawn(["bun", `${import.meta.dir}/support/idle-loader-child.ts`, path], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => child.kill(), 10_000);
    const code = await child.exited;
    clearTimeout(timer);
    const stderr = await new Response(child.stderr).text();
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(await new Response(child.stdout).text())).toEqual({ offThread: 2, outputs: 2 });
  });
});

describe("the load pool's threads", () => {
  const script = `${import.meta.dir}/support/dying-load-thread.ts`;

  test("a thread that dies fails its job with INTERNAL and is replaced on the next job", async () => {
    const pool = new LoadPool({ pluginPath: "unused.so", size: 1, script });
    const none = new Uint8Array(0);
    const died = await outcome(pool.load(0, text("die"), none));
    expect(isXlaserveError(died, "INTERNAL")).toBe(true);
    expect((died as Error).message).toContain("the thread was told to die");
    expect(pool.threadCount).toBe(0);
    expect(await pool.load(0, text("load"), none)).toBe(42);
    const exited = await outcome(pool.load(0, text("exit"), none));
    expect(isXlaserveError(exited, "INTERNAL")).toBe(true);
    expect((exited as Error).message).toContain("exited (code 7)");
    // jobs queued behind a dying thread are served by its replacement
    const [a, b] = await Promise.all([outcome(pool.load(0, text("die"), none)), pool.load(0, text("load"), none)]);
    expect(isXlaserveError(a, "INTERNAL")).toBe(true);
    expect(b).toBe(42);
    expect(pool.threadCount).toBe(1);
    await pool.close();
    expect(pool.threadCount).toBe(0);
    await expect(pool.load(0, text("load"), none)).rejects.toMatchObject({ code: "DISPOSED" });
  });
});

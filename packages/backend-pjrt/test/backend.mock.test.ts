import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type HostTensor, isXlaserveError } from "@xlaserve/core";
import { LAYOUT_0_113 } from "../src/abi/slots.ts";
import { type PjrtBackend, createPjrtBackend } from "../src/backend.ts";
import { compileOptionsProto } from "../src/compile-options.ts";
import { AUTO_POLL_MS } from "../src/runtime/events.ts";
import { buildMock, mockControls } from "./support/build-mock.ts";

const slot = (name: string) => LAYOUT_0_113.slots.indexOf(name);
const f32 = (shape: number[], values: number[]): HostTensor => ({
  dtype: "f32",
  shape,
  data: new Float32Array(new ArrayBuffer(values.length * 4)).map((_, i) => values[i] ?? 0),
});
const MODULE = {
  bytes: new TextEncoder().encode("module @m { func.func @main() }"),
  format: "text" as const,
  origin: "m.mlir",
};

let path: string;
let mock: ReturnType<typeof mockControls>;
let backend: PjrtBackend;
/** What the shared backend's own client holds: counts no other test's garbage moves. */
let own: ReturnType<ReturnType<typeof mockControls>["newestClient"]>;
const liveBuffers = () => own.buffers();

beforeAll(() => {
  path = buildMock("ok");
  mock = mockControls(path);
  backend = createPjrtBackend({
    pluginPath: path,
    memoryFraction: 0.5,
    isolateCompile: false,
    clientOptions: [
      { name: "allocator", type: "string", value: "bfc" },
      { name: "node_id", type: "int64", value: 3 },
    ],
  });
  own = mock.newestClient();
});
afterAll(async () => {
  await backend.dispose();
});

describe("PJRT backend on the mock plugin", () => {
  test("client options are marshaled as named values (preallocate off by default)", () => {
    expect(mock.clientOptions()).toBe("preallocate=false;memory_fraction=0.5;allocator=bfc;node_id=3;");
  });

  test("a memory fraction outside (0, 1] is CONFIG_INVALID", () => {
    expect(() => createPjrtBackend({ pluginPath: path, memoryFraction: 1.5 })).toThrow(/memoryFraction/);
  });

  test("identity, devices and plugin attributes", () => {
    const id = backend.identity();
    expect(id.backend).toBe("pjrt");
    expect(id.platform).toBe("mock");
    expect(id.buildId).toMatch(/^mock-xla-1\+[0-9a-f]{16}$/);
    expect(id.runtimeVersion).toBe("mockrt 1.2");
    expect(id.deviceKind).toBe("Mock Device");
    expect(id.computeCapability).toBe("9.0");
    expect(backend.devices()).toEqual([
      { id: 0, kind: "Mock Device", attributes: { compute_capability: "9.0", core_count: 132 } },
    ]);
    expect(backend.attributes.stablehloCurrentVersion).toBe("1.9.5");
  });

  test("upload / download round-trips bytes; events wake the JS thread from a plugin thread", async () => {
    const calling = createPjrtBackend({ pluginPath: path, isolateCompile: false, eventWait: "callback" });
    const onReady = mock.calls(slot("PJRT_Event_OnReady"));
    const fromThreads = mock.callbacksFromOtherThreads();
    const t = f32([2, 3], [1, 2, 3, 4, 5, 6]);
    using b = await calling.upload(t);
    // A request-sized input is staged by the plugin during the call (kImmutableOnlyDuringCall).
    expect(mock.lastSemantics()).toBe(0);
    expect(b.shape).toEqual([2, 3]);
    expect(b.byteLength).toBe(24);
    const back = await calling.download(b);
    expect(Array.from(back.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
    // done_with_host_buffer and the download's event: both awaited through OnReady, called back
    // from the mock's own threads through the threadsafe JSCallback.
    expect(mock.calls(slot("PJRT_Event_OnReady")) - onReady).toBe(2);
    expect(mock.callbacksFromOtherThreads() - fromThreads).toBe(2);
    b.dispose();
    // One over STAGED_UPLOAD_MAX_BYTES is read in place until its transfer completes.
    const large = 4 * 1024 * 1024 + 4;
    using big = await calling.upload(
      f32(
        [large / 4],
        Array.from({ length: large / 4 }, (_, i) => i % 7),
      ),
    );
    expect(mock.lastSemantics()).toBe(1); // kImmutableUntilTransferCompletes
    big.dispose();
    await calling.dispose();
    expect(mock.liveEvents()).toBe(0);
  });

  test("the default wait (auto) sees short work by polling event-loop turns, without OnReady", async () => {
    // A window far above the default: three event-loop turns on a loaded 2-core CI machine can
    // take longer than AUTO_POLL_MS, which would (correctly) hand the wait to OnReady.
    const auto = createPjrtBackend({ pluginPath: path, isolateCompile: false, loadThreads: 0, autoPollMs: 10_000 });
    const onReady = mock.calls(slot("PJRT_Event_OnReady"));
    const isReady = mock.calls(slot("PJRT_Event_IsReady"));
    const b = await auto.upload(f32([2], [3, 4]));
    expect(Array.from((await auto.download(b)).data as Float32Array)).toEqual([3, 4]);
    expect(mock.calls(slot("PJRT_Event_OnReady"))).toBe(onReady);
    // each mock event turns ready on the third poll
    expect(mock.calls(slot("PJRT_Event_IsReady")) - isReady).toBe(6);
    b.dispose();
    await auto.dispose();
    expect(mock.liveEvents()).toBe(0);
  });

  test("auto hands work that outlasts its polling window to OnReady", async () => {
    mock.setPollsToReady(1_000_000_000);
    try {
      const onReady = mock.calls(slot("PJRT_Event_OnReady"));
      const fromThreads = mock.callbacksFromOtherThreads();
      const t0 = performance.now();
      using b = await backend.upload(f32([3], [5, 6, 7]));
      expect(performance.now() - t0).toBeGreaterThanOrEqual(AUTO_POLL_MS);
      expect(Array.from((await backend.download(b)).data as Float32Array)).toEqual([5, 6, 7]);
      expect(mock.calls(slot("PJRT_Event_OnReady")) - onReady).toBe(2);
      expect(mock.callbacksFromOtherThreads() - fromThreads).toBe(2);
    } finally {
      mock.setPollsToReady(2);
    }
    expect(mock.liveEvents()).toBe(0);
  });

  test("the polling wait works too (eventWait: poll)", async () => {
    const polling = createPjrtBackend({ pluginPath: path, isolateCompile: false, eventWait: "poll" });
    const onReady = mock.calls(slot("PJRT_Event_OnReady"));
    const isReady = mock.calls(slot("PJRT_Event_IsReady"));
    const b = await polling.upload(f32([2], [7, 8]));
    expect(Array.from((await polling.download(b)).data as Float32Array)).toEqual([7, 8]);
    expect(mock.calls(slot("PJRT_Event_OnReady"))).toBe(onReady);
    // each mock event turns ready on the third poll
    expect(mock.calls(slot("PJRT_Event_IsReady")) - isReady).toBe(6);
    await polling.dispose();
    expect(mock.liveEvents()).toBe(0);
  });

  test("a failure the device reports through the completion event is EXECUTE_FAILED", async () => {
    const exe = await backend.compile({ bytes: new TextEncoder().encode("mock.execfail"), format: "text" }, {});
    const x = await backend.upload(f32([2], [1, 2]));
    const buffers = liveBuffers();
    const errors = mock.liveErrors();
    let caught: unknown;
    try {
      await backend.execute(exe, [x]);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "EXECUTE_FAILED")).toBe(true);
    expect((caught as Error).message).toContain("the device reported a failure");
    expect((caught as { details: Record<string, unknown> }).details.pjrtCodeName).toBe("INTERNAL");
    expect(liveBuffers()).toBe(buffers); // the outputs were released
    expect(mock.liveErrors()).toBe(errors);
    x.dispose();
    exe.dispose();
  });

  test("compile sends the options proto; execute reuses weights and returns every output", async () => {
    const exe = await backend.compile(MODULE, { deterministic: true });
    expect(
      Buffer.from(mock.lastCompileOptions()).equals(Buffer.from(compileOptionsProto({ deterministic: true }))),
    ).toBe(true);
    expect(exe.outputCount).toBe(2);
    const weight = await backend.upload(f32([3], [10, 20, 30]));
    for (const x of [1, 2]) {
      const input = await backend.upload(f32([3], [x, x, x]));
      const [sum, count] = await backend.execute(exe, [input, weight]);
      expect(Array.from((await backend.download(sum!)).data as Float32Array)).toEqual([10 + x, 20 + x, 30 + x]);
      const n = await backend.download(count!);
      expect(n.dtype).toBe("i32");
      expect(Array.from(n.data as Int32Array)).toEqual([2]);
      for (const b of [input, sum!, count!]) b.dispose();
    }
    // the weight survived both calls
    expect(Array.from((await backend.download(weight)).data as Float32Array)).toEqual([10, 20, 30]);
    weight.dispose();
    exe.dispose();
    expect(liveBuffers()).toBe(0);
  });

  test("serialize / deserialize gives a program that runs the same", async () => {
    const exe = await backend.compile(MODULE, {});
    const bytes = await backend.serialize(exe);
    expect(new TextDecoder().decode(bytes.slice(0, 9))).toBe("MOCKEXEC:");
    const again = await backend.deserialize(bytes, {});
    const input = await backend.upload(f32([2], [1.5, 2.5]));
    const a = await backend.execute(exe, [input]);
    const b = await backend.execute(again, [input]);
    const da = await backend.download(a[0]!);
    const db = await backend.download(b[0]!);
    expect(Buffer.from(da.data.buffer).equals(Buffer.from(db.data.buffer))).toBe(true);
    for (const x of [...a, ...b, input]) x.dispose();
    exe.dispose();
    again.dispose();
  });

  test("a PJRT_Error becomes a typed error with the PJRT code and message, and is destroyed", async () => {
    const errorsBefore = mock.liveErrors();
    let caught: unknown;
    try {
      await backend.compile({ bytes: new TextEncoder().encode("mock.fail"), format: "text", origin: "bad.mlir" }, {});
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "COMPILE_FAILED")).toBe(true);
    const e = caught as { message: string; details: Record<string, unknown> };
    expect(e.message).toContain("bad.mlir");
    expect(e.message).toContain("cannot parse module at line 1");
    expect(e.details.pjrtCodeName).toBe("INVALID_ARGUMENT");
    expect(e.details.pjrtCode).toBe(3);
    expect(mock.liveErrors()).toBe(errorsBefore);
    let bad: unknown;
    try {
      await backend.deserialize(new Uint8Array([1, 2, 3]), {});
    } catch (error) {
      bad = error;
    }
    expect(isXlaserveError(bad, "PJRT_ERROR")).toBe(true);
    expect((bad as { details: Record<string, unknown> }).details.pjrtCodeName).toBe("DATA_LOSS");
    expect(mock.liveErrors()).toBe(errorsBefore);
  });

  test("bad inputs are typed errors", async () => {
    const wrong = { dtype: "f32" as const, shape: [4], data: new Float32Array(new ArrayBuffer(8)) };
    await expect(backend.upload(wrong)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(backend.upload(f32([1], [1]), 3)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const empty = { bytes: new Uint8Array(0), format: "text" as const };
    await expect(backend.compile(empty, {})).rejects.toMatchObject({ code: "COMPILE_FAILED" });
    const b = await backend.upload(f32([1], [1]));
    b.dispose();
    b.dispose(); // idempotent
    await expect(backend.download(b)).rejects.toMatchObject({ code: "DISPOSED" });
    const i8 = { dtype: "i8" as const, shape: [2], data: new Int8Array(new ArrayBuffer(2)) };
    const exe = await backend.compile(MODULE, {});
    const ib = await backend.upload(i8);
    await expect(backend.execute(exe, [ib])).rejects.toMatchObject({ code: "EXECUTE_FAILED" });
    ib.dispose();
    exe.dispose();
  });

  test("memory stats and ClearMemoryStats (peak drops to what is in use)", async () => {
    const keep = await backend.upload(f32([256], new Array(256).fill(1)));
    const temp = await backend.upload(f32([4096], new Array(4096).fill(1)));
    temp.dispose();
    const before = backend.memoryStats();
    expect(before.peakBytes).toBeGreaterThanOrEqual(before.inUseBytes + 4096 * 4);
    expect(before.limitBytes).toBe(1 << 30);
    backend.resetPeakMemory();
    const after = backend.memoryStats();
    expect(after.peakBytes).toBe(after.inUseBytes);
    expect(after.inUseBytes).toBe(before.inUseBytes);
    keep.dispose();
  });

  test("a buffer collected undisposed is released by the FinalizationRegistry", async () => {
    const live = liveBuffers();
    await (async () => {
      await backend.upload(f32([8], new Array(8).fill(3)));
    })();
    expect(liveBuffers()).toBe(live + 1);
    for (let i = 0; i < 50 && liveBuffers() > live; i++) {
      Bun.gc(true);
      await Bun.sleep(5);
    }
    expect(liveBuffers()).toBe(live);
  });

  test("buffers and programs left undisposed are destroyed with the client", async () => {
    // Counted for this client alone: the process-wide totals also move when an earlier test's
    // garbage is finalized, which once failed this test in CI.
    const other = createPjrtBackend({ pluginPath: path, isolateCompile: false });
    const owned = mock.newestClient();
    const kept = await other.upload(f32([8], new Array(8).fill(2)));
    const exe = await other.compile(MODULE, {});
    expect(owned.buffers()).toBe(1);
    expect(owned.executables()).toBe(2);
    await other.dispose();
    expect(owned.buffers()).toBe(0);
    expect(owned.executables()).toBe(0);
    kept.dispose(); // after the client: a no-op, not a double free
    exe.dispose();
    await other.dispose(); // idempotent
    await expect(other.upload(f32([1], [1]))).rejects.toMatchObject({ code: "DISPOSED" });
  });
});

describe("crash isolation (compile in a child process)", () => {
  test("a module that aborts the compiler fails with COMPILER_CRASHED and the child's stderr", async () => {
    const isolated = createPjrtBackend({ pluginPath: path, isolateCompile: true });
    let caught: unknown;
    try {
      await isolated.compile(
        { bytes: new TextEncoder().encode("mock.crash"), format: "text", origin: "crash.mlir" },
        {},
      );
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "COMPILER_CRASHED")).toBe(true);
    expect((caught as Error).message).toContain("the module asked to crash");
    expect((caught as Error).message).toContain("crash.mlir");

    // a compile error in the child keeps its code; a good module compiles there and runs here
    await expect(
      isolated.compile({ bytes: new TextEncoder().encode("mock.fail"), format: "text" }, {}),
    ).rejects.toMatchObject({ code: "COMPILE_FAILED" });
    const exe = await isolated.compile(MODULE, {});
    const x = await isolated.upload(f32([2], [4, 5]));
    const [y] = await isolated.execute(exe, [x]);
    expect(Array.from((await isolated.download(y!)).data as Float32Array)).toEqual([4, 5]);
    await isolated.dispose();
  });

  test("dispose kills a compile child still running; its compile fails with DISPOSED", async () => {
    const isolated = createPjrtBackend({ pluginPath: path, isolateCompile: true, loadThreads: 0 });
    const source = { bytes: new TextEncoder().encode("module @long { mock.sleep_ms=20000 }"), format: "text" as const };
    const compiling = isolated.compile({ ...source, origin: "long.mlir" }, {}).then(
      () => null,
      (error: unknown) => error,
    );
    const children = () =>
      Bun.spawnSync(["pgrep", "-P", String(process.pid), "-f", "compile-child"])
        .stdout.toString()
        .trim();
    for (let i = 0; i < 200 && children() === ""; i++) await Bun.sleep(10);
    expect(children()).not.toBe("");
    const t0 = performance.now();
    await isolated.dispose();
    const caught = await compiling;
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(isXlaserveError(caught, "DISPOSED")).toBe(true);
    expect((caught as Error).message).toContain("long.mlir");
    for (let i = 0; i < 100 && children() !== ""; i++) await Bun.sleep(10);
    expect(children()).toBe("");
  });
});

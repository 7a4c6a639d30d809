import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { generateHeader } from "./gen-header.ts";

/** The gitignored folder the tests build the mock plugin into. */
export const BUILD_DIR = resolve(import.meta.dir, "../../build");
const SOURCE = resolve(import.meta.dir, "../../csrc/mock_pjrt.c");

export type MockVariant =
  | "ok"
  | "wrong_major"
  | "wrong_minor"
  | "short_table"
  | "crash_on_load"
  | "null_api"
  | "no_symbol"
  | "no_clear_stats";

const built = new Map<MockVariant, string>();
let headerWritten = false;

/**
 * Builds one variant of the mock plugin with `cc -shared -fPIC` into build/. Each variant is a
 * separate library (its own statics), so tests of different variants never share state.
 */
export function buildMock(variant: MockVariant = "ok"): string {
  const cached = built.get(variant);
  if (cached) return cached;
  mkdirSync(BUILD_DIR, { recursive: true });
  if (!headerWritten) {
    writeFileSync(join(BUILD_DIR, "pjrt_gen.h"), generateHeader());
    headerWritten = true;
  }
  const out = join(BUILD_DIR, `mock_pjrt_${variant}.so`);
  const flags = variant === "no_symbol" ? ["-DMOCK_NO_GETPJRTAPI"] : [`-DMOCK_VARIANT="${variant}"`];
  const result = Bun.spawnSync(
    [
      "cc",
      "-shared",
      "-fPIC",
      "-pthread",
      "-O1",
      "-Wall",
      "-Werror",
      "-std=gnu11",
      ...flags,
      "-I",
      BUILD_DIR,
      "-o",
      out,
      SOURCE,
    ],
    { stderr: "pipe" },
  );
  if (result.exitCode !== 0) {
    throw new Error(`cc failed building the mock PJRT plugin (${variant}):\n${result.stderr.toString()}`);
  }
  built.set(variant, out);
  return out;
}

/** The mock's recording functions, read through a second dlopen of the same library. */
export function mockControls(path: string) {
  const { dlopen, CString } = require("bun:ffi") as typeof import("bun:ffi");
  const lib = dlopen(path, {
    mock_calls: { args: ["i32"], returns: "i32" },
    mock_live_errors: { args: [], returns: "i32" },
    mock_live_buffers: { args: [], returns: "i32" },
    mock_live_events: { args: [], returns: "i32" },
    mock_live_executables: { args: [], returns: "i32" },
    mock_last_semantics: { args: [], returns: "i32" },
    mock_client_options: { args: [], returns: "ptr" },
    mock_last_options: { args: ["ptr", "u64"], returns: "u64" },
    mock_layout: { args: [], returns: "ptr" },
    mock_callbacks_from_other_threads: { args: [], returns: "i32" },
    mock_set_polls_to_ready: { args: ["i32"], returns: "void" },
    mock_max_concurrent_loads: { args: [], returns: "i32" },
    mock_reset_max_concurrent_loads: { args: [], returns: "void" },
    mock_loads_off_client_thread: { args: [], returns: "i32" },
    mock_reset_load_sleeps: { args: [], returns: "void" },
    mock_clients_created: { args: [], returns: "i32" },
    mock_client_live_buffers: { args: ["i32"], returns: "i32" },
    mock_client_live_executables: { args: ["i32"], returns: "i32" },
  });
  const s = lib.symbols;
  return {
    calls: (slot: number) => s.mock_calls(slot),
    liveErrors: () => s.mock_live_errors(),
    liveBuffers: () => s.mock_live_buffers(),
    liveEvents: () => s.mock_live_events(),
    liveExecutables: () => s.mock_live_executables(),
    lastSemantics: () => s.mock_last_semantics(),
    clientOptions: () => new CString(s.mock_client_options() as never).toString(),
    lastCompileOptions: () => {
      const out = new Uint8Array(new ArrayBuffer(4096));
      const n = Number(s.mock_last_options(out, 4096n));
      return out.slice(0, n);
    },
    callbacksFromOtherThreads: () => s.mock_callbacks_from_other_threads(),
    /** IsReady polls after which a mock event is ready (2 by default). */
    setPollsToReady: (n: number) => s.mock_set_polls_to_ready(n),
    layout: () => new CString(s.mock_layout() as never).toString(),
    /** The most DeserializeAndLoad calls running at once since the last reset. */
    maxConcurrentLoads: () => s.mock_max_concurrent_loads(),
    resetMaxConcurrentLoads: () => s.mock_reset_max_concurrent_loads(),
    /** DeserializeAndLoad calls made on a thread other than the one that created the client. */
    loadsOffClientThread: () => s.mock_loads_off_client_thread(),
    /** Starts `mock.load_sleeps=` lists over at their first entry. */
    resetLoadSleeps: () => s.mock_reset_load_sleeps(),
    /**
     * What the newest client (the last backend created) holds, read live. Unlike the process-wide
     * totals, another backend's finalizers and loader threads never move these counts.
     */
    newestClient: () => {
      const ordinal = s.mock_clients_created();
      return {
        buffers: () => s.mock_client_live_buffers(ordinal),
        executables: () => s.mock_client_live_executables(ordinal),
      };
    },
  };
}

import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import { gateTable } from "../src/api/gate.ts";
import { PjrtApi } from "../src/api/pjrt-api.ts";
import { CStruct } from "../src/abi/cstruct.ts";
import { PJRT_Plugin_Initialize_Args } from "../src/abi/structs.ts";
import { createPjrtBackend } from "../src/backend.ts";
import { probePjrtPlugin } from "../src/probe.ts";
import { buildMock } from "./support/build-mock.ts";

function openError(path: string) {
  try {
    PjrtApi.open(path);
  } catch (error) {
    return error;
  }
  throw new Error("expected PjrtApi.open to fail");
}

describe("the gate (pure)", () => {
  test("admits the verified pairs", () => {
    expect(gateTable({ major: 0, minor: 115, structSize: 1144 }).verifiedOn).toContain("H200");
    expect(gateTable({ major: 0, minor: 113, structSize: 1144 }).layout.slots.length).toBe(138);
  });

  test("refuses another major, an unverified minor, or a table of another size, naming both versions", () => {
    for (const facts of [
      { major: 1, minor: 0, structSize: 1144 },
      { major: 0, minor: 114, structSize: 1144 },
      { major: 0, minor: 115, structSize: 1136 },
    ]) {
      let caught: unknown;
      try {
        gateTable(facts, "p.so");
      } catch (error) {
        caught = error;
      }
      expect(isXlaserveError(caught, "PLUGIN_VERSION_MISMATCH")).toBe(true);
      const message = (caught as Error).message;
      expect(message).toContain(`${facts.major}.${facts.minor}`);
      expect(message).toContain("0.115");
    }
  });
});

describe("the gate against the mock plugin", () => {
  test("the right version opens", () => {
    const api = PjrtApi.open(buildMock("ok"));
    expect(api.version).toBe("0.115");
    expect(api.plugin.facts.structSize).toBe(1144);
  });

  test("wrong major, wrong minor and a short table are PLUGIN_VERSION_MISMATCH, never a call", () => {
    const expectations = [
      ["wrong_major", "1.115"],
      ["wrong_minor", "0.90"],
      ["short_table", "984 bytes"],
    ] as const;
    for (const [variant, text] of expectations) {
      const error = openError(buildMock(variant));
      expect(isXlaserveError(error, "PLUGIN_VERSION_MISMATCH")).toBe(true);
      expect((error as Error).message).toContain(text);
    }
  });

  test("a missing file, a library without GetPjrtApi and a NULL table are PLUGIN_NOT_FOUND", () => {
    for (const path of ["/nonexistent/dir/plugin.so", buildMock("no_symbol"), buildMock("null_api")]) {
      const error = openError(path);
      expect(isXlaserveError(error, "PLUGIN_NOT_FOUND")).toBe(true);
    }
  });

  test("an empty slot is UNSUPPORTED, not a call through NULL", () => {
    const backend = createPjrtBackend({ pluginPath: buildMock("no_clear_stats"), isolateCompile: false });
    expect(backend.api.slotAddress("PJRT_Device_ClearMemoryStats")).toBe(0);
    expect(backend.api.slotAddress("PJRT_Device_MemoryStats")).not.toBe(0);
    let caught: unknown;
    try {
      backend.resetPeakMemory();
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "UNSUPPORTED")).toBe(true);
    expect((caught as Error).message).toContain("PJRT_Device_ClearMemoryStats");
    expect(backend.memoryStats().inUseBytes).toBe(0);
  });

  test("a slot called with another slot's args struct is refused before the call", () => {
    const api = PjrtApi.open(buildMock("ok"));
    expect(() => api.call("PJRT_Client_Create", new CStruct(PJRT_Plugin_Initialize_Args))).toThrow(
      /takes PJRT_Client_Create_Args/,
    );
  });
});

describe("probePjrtPlugin (child process)", () => {
  test("reports the facts of a good plugin", async () => {
    const result = await probePjrtPlugin(buildMock("ok"));
    expect(result).toEqual({
      ok: true,
      facts: {
        apiVersion: "0.115",
        structSize: 1144,
        verifiedOn: "jax-cuda13-pjrt on NVIDIA H200",
        xlaVersion: "mock-xla-1",
        stablehloCurrentVersion: "1.9.5",
        stablehloMinimumVersion: "0.9.0",
      },
    });
  });

  test("reports mismatches and missing plugins as codes, without throwing", async () => {
    const major = await probePjrtPlugin(buildMock("wrong_major"));
    expect(major.ok).toBe(false);
    if (!major.ok) expect(major.code).toBe("PLUGIN_VERSION_MISMATCH");
    const missing = await probePjrtPlugin("/nonexistent/dir/plugin.so");
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.code).toBe("PLUGIN_NOT_FOUND");
  });

  test("a plugin that aborts while loading ends the probe process only", async () => {
    const result = await probePjrtPlugin(buildMock("crash_on_load"));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.code).toBe("PLUGIN_NOT_FOUND");
      expect(result.message).toContain("crashing on load as asked");
    }
  });
});

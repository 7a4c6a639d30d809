import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ProbeResult } from "@xlaserve/core/engine/select.ts";
import { memoizedProbe } from "../src/engine/probe-memo.ts";

test("a plugin file that passed the probe is not probed again until it or the bindings change", async () => {
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-probe-memo-"));
  try {
    const plugin = join(dir, "plugin.so");
    writeFileSync(plugin, "v1");
    let calls = 0;
    let verdict: ProbeResult = { ok: false, code: "PLUGIN_NOT_FOUND", message: "no" };
    const probe = () => {
      calls++;
      return verdict;
    };
    const state = join(dir, "state");
    expect((await memoizedProbe(probe, state, "b1")(plugin)).ok).toBe(false);
    expect((await memoizedProbe(probe, state, "b1")(plugin)).ok).toBe(false);
    expect(calls).toBe(2); // failures are never remembered
    verdict = { ok: true, facts: { apiVersion: "0.90" } };
    expect((await memoizedProbe(probe, state, "b1")(plugin)).ok).toBe(true);
    expect(await memoizedProbe(probe, state, "b1")(plugin)).toEqual(verdict);
    expect(calls).toBe(3);
    await memoizedProbe(probe, state, "b2")(plugin); // other bindings
    expect(calls).toBe(4);
    writeFileSync(plugin, "v2-longer");
    utimesSync(plugin, new Date(), new Date(Date.now() + 5000));
    await memoizedProbe(probe, state, "b2")(plugin); // the file changed
    expect(calls).toBe(5);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

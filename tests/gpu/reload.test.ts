import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { gpuBackend } from "./support/backend.ts";
import { bundleCases } from "./support/bundles.ts";
import { gpuPlugin } from "./support/plugin.ts";
import { childOutputEquals, runReloadChild, writeReloadJob } from "./support/reload-job.ts";
import { recordResult, round } from "./support/results.ts";

const backend = await gpuBackend();

describe.skipIf(!backend)("a serialized executable reloaded in a fresh process", () => {
  test("gives byte-identical outputs for every example bundle", async () => {
    if (!backend) return;
    const plugin = await gpuPlugin();
    if ("skip" in plugin) return;
    const figures: Record<string, unknown>[] = [];
    for (const model of ["mlp", "cnn", "transformer"]) {
      const c = bundleCases(model)[0];
      if (!c) continue;
      const dir = mkdtempSync(join(tmpdir(), "xlaserve-reload-"));
      try {
        const exe = await backend.compile(c.module, {});
        const bytes = await backend.serialize(exe);
        const args = await Promise.all(c.args.map((a) => backend.upload(a)));
        const outs = await backend.execute(exe, args);
        const here: HostTensor[] = await Promise.all(outs.map((o) => backend.download(o)));
        const { job, jobFile } = writeReloadJob(dir, plugin.path, bytes, c.args);
        const { exitCode, timing } = runReloadChild(jobFile);
        expect(exitCode).toBe(0);
        here.forEach((h, i) => {
          expect(childOutputEquals(job, i, h)).toBe(true);
        });
        figures.push({
          model,
          batch: c.batch,
          serializedBytes: bytes.byteLength,
          byteIdentical: true,
          child: roundAll(timing),
        });
        for (const b of [...args, ...outs]) b.dispose();
        exe.dispose();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    recordResult("reload_fresh_process", figures);
  }, 240_000);
});

function roundAll(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v, 2)]));
}

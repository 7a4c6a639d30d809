import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { DeviceBuffer, HostTensor } from "@xlaserve/core";
import { gpuBackend } from "./support/backend.ts";
import { BUNDLES, bundleCases, maxAbsDiff, sameBytes, tolerance } from "./support/bundles.ts";
import { median, recordResult, round } from "./support/results.ts";

const backend = await gpuBackend();
const RUNS = 50;

describe.skipIf(!backend)("example bundles on the GPU (PJRT)", () => {
  const figures: Record<string, unknown>[] = [];

  for (const model of BUNDLES) {
    test(`${model}: every batch size compiles, runs and matches the XLA GPU reference`, async () => {
      if (!backend) return;
      for (const c of bundleCases(model)) {
        let t = performance.now();
        const exe = await backend.compile(c.module, {});
        const compileMs = performance.now() - t;
        expect(exe.outputCount).toBe(c.outputNames.length);

        t = performance.now();
        const bytes = await backend.serialize(exe);
        const serializeMs = performance.now() - t;
        t = performance.now();
        const loaded = await backend.deserialize(bytes, {});
        const deserializeMs = performance.now() - t;

        // Weights uploaded once; the model input uploaded per call.
        const [input, ...weights] = c.args as [HostTensor, ...HostTensor[]];
        const weightBuffers: DeviceBuffer[] = [];
        for (const w of weights) weightBuffers.push(await backend.upload(w));
        const run = async (program: typeof exe) => {
          const x = await backend.upload(input);
          const outs = await backend.execute(program, [x, ...weightBuffers]);
          const host = await Promise.all(outs.map((o) => backend.download(o)));
          x.dispose();
          for (const o of outs) o.dispose();
          return host;
        };
        const got = await run(exe);
        const again = await run(loaded);

        const diffsGpu = got.map((g, i) => maxAbsDiff(g, c.expectedGpu[i] as HostTensor));
        const diffsCpu = got.map((g, i) => maxAbsDiff(g, c.expectedCpu[i] as HostTensor));
        got.forEach((g, i) => {
          expect(g.shape).toEqual([...(c.expectedGpu[i] as HostTensor).shape]);
        });
        diffsGpu.forEach((d, i) => {
          expect(d).toBeLessThan(tolerance(c.expectedGpu[i] as HostTensor, 1e-3));
        });
        diffsCpu.forEach((d, i) => {
          expect(d).toBeLessThan(tolerance(c.expectedCpu[i] as HostTensor, 1e-2));
        });
        // Rule 6: the compiled program and its serialized copy give the same bytes.
        got.forEach((g, i) => {
          expect(sameBytes(g, again[i] as HostTensor)).toBe(true);
        });

        // Latency: execute (awaited to completion) with resident weights and input, median of RUNS.
        const x = await backend.upload(input);
        const times: number[] = [];
        for (let i = 0; i < RUNS + 5; i++) {
          const s = performance.now();
          const outs = await backend.execute(loaded, [x, ...weightBuffers]);
          const e = performance.now() - s;
          if (i >= 5) times.push(e);
          for (const o of outs) o.dispose();
        }
        const roundTrip: number[] = [];
        for (let i = 0; i < RUNS; i++) {
          const s = performance.now();
          await run(loaded);
          roundTrip.push(performance.now() - s);
        }
        x.dispose();
        for (const w of weightBuffers) w.dispose();
        exe.dispose();
        loaded.dispose();
        figures.push({
          model,
          batch: c.batch,
          compileMs: round(compileMs, 1),
          serializeMs: round(serializeMs, 2),
          deserializeMs: round(deserializeMs, 2),
          serializedBytes: bytes.byteLength,
          maxAbsDiffVsGpuReference: diffsGpu,
          maxAbsDiffVsCpuReference: diffsCpu,
          identicalAfterDeserialize: true,
          executeMedianMs: round(median(times)),
          uploadExecuteDownloadMedianMs: round(median(roundTrip)),
          runs: RUNS,
        });
        recordResult("bundles", figures);
      }
    }, 240_000);
  }

  test("a portable artifact (MLIR bytecode) compiles and matches the text module's reference", async () => {
    if (!backend) return;
    const [c] = bundleCases("mlp");
    if (!c) throw new Error("no mlp b1 case");
    const bytes = new Uint8Array(readFileSync(resolve(import.meta.dir, "../fixtures/mlp_portable_b1.mlirbc")));
    const exe = await backend.compile({ bytes, format: "bytecode", origin: "mlp_portable_b1.mlirbc" }, {});
    const args = await Promise.all(c.args.map((a) => backend.upload(a)));
    const outs = await backend.execute(exe, args);
    const host = await Promise.all(outs.map((o) => backend.download(o)));
    const diffs = host.map((h, i) => maxAbsDiff(h, c.expectedGpu[i] as HostTensor));
    diffs.forEach((d, i) => {
      expect(d).toBeLessThan(tolerance(c.expectedGpu[i] as HostTensor, 1e-3));
    });
    recordResult("portable_bytecode", {
      module: "tests/fixtures/mlp_portable_b1.mlirbc",
      maxAbsDiffVsGpuReference: diffs,
    });
    for (const b of [...args, ...outs]) b.dispose();
    exe.dispose();
  });
});

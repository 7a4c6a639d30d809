/**
 * The engine's own ceiling for coalescing, outside any worker: one bundle's batch-1 program and
 * its largest compiled size run in this process on the same engine, taking turns in blocks
 * (inputs uploaded, run, outputs downloaded, as one execution of the worker does). N x t(1) / t(N)
 * is what coalescing N batch-1 requests into one execution can gain at most where the engine is
 * the bottleneck, whatever the request path costs.
 */
import type { AbstractBackend, HostTensor } from "@xlaserve/core";
import { loadBundle } from "@xlaserve/core/bundle/load.ts";
import { disposeAll, downloadAll, inputsFor, moduleFor, uploadAll, uploadWeights } from "./bundle-io.ts";
import { percentile } from "./stats.ts";

export interface EngineCeiling {
  readonly largestCompiledSize: number;
  readonly executionMsBatch1: number;
  readonly executionMsLargest: number;
  /** largest x t(1) / t(largest). */
  readonly ceiling: number;
  readonly blocks: number;
}

export async function createBenchBackend(engine: "reactant" | "pjrt", plugin?: string): Promise<AbstractBackend> {
  if (engine === "reactant") return (await import("@xlaserve/backend-reactant")).createReactantBackend();
  if (!plugin) throw new Error("--engine pjrt needs --plugin (or XLASERVE_PJRT_PLUGIN)");
  return (await import("@xlaserve/backend-pjrt")).createPjrtBackend({ pluginPath: plugin });
}

/** Median ms of one execution at batch 1 and at the largest size, over `blocks` turns each lasting about `blockMs`. */
export async function engineCeiling(
  backend: AbstractBackend,
  dir: string,
  blocks = 6,
  blockMs = 200,
): Promise<EngineCeiling> {
  const bundle = await loadBundle(dir);
  const largest = Math.max(...bundle.manifest.compiledBatchSizes);
  const weights = await uploadWeights(backend, bundle);
  const sides = [1, largest].map(async (batch) => {
    const module = moduleFor(bundle, batch);
    const exe = await backend.compile({ bytes: await module.read(), format: module.format }, {});
    return { batch, exe, inputs: inputsFor(bundle, module, batch).tensors, ms: [] as number[] };
  });
  const [one, big] = await Promise.all(sides);
  if (!one || !big) throw new Error("no programs");
  const once = async (inputs: readonly HostTensor[], exe: (typeof one)["exe"]) => {
    const args = await uploadAll(backend, inputs);
    const outs = await backend.execute(exe, [...args, ...weights]);
    await downloadAll(backend, outs);
    disposeAll(args);
    disposeAll(outs);
  };
  try {
    for (const s of [one, big]) for (let i = 0; i < 3; i++) await once(s.inputs, s.exe);
    for (let b = 0; b < blocks; b++) {
      for (const s of [one, big]) {
        const end = performance.now() + blockMs;
        let runs = 0;
        const t0 = performance.now();
        while (performance.now() < end || runs === 0) {
          await once(s.inputs, s.exe);
          runs++;
        }
        s.ms.push((performance.now() - t0) / runs);
      }
    }
  } finally {
    one.exe.dispose();
    big.exe.dispose();
    disposeAll(weights);
  }
  const t1 = percentile(one.ms, 50);
  const tN = percentile(big.ms, 50);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    largestCompiledSize: largest,
    executionMsBatch1: r3(t1),
    executionMsLargest: r3(tN),
    ceiling: r3((largest * t1) / tN),
    blocks,
  };
}

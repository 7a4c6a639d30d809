import { describe, expect, test } from "bun:test";
import type { CompileOptions, HostTensor } from "@xlaserve/core";
import { gpuBackend } from "./support/backend.ts";
import { bundleCases, sameBytes } from "./support/bundles.ts";
import { recordResult } from "./support/results.ts";

const backend = await gpuBackend();

describe.skipIf(!backend)("compiling one module twice", () => {
  test("measures whether two compiles give the same bits, default and deterministic", async () => {
    if (!backend) return;
    const figures: Record<string, unknown>[] = [];
    for (const model of ["cnn", "transformer"]) {
      const c = bundleCases(model).at(-1);
      if (!c) continue;
      const args = await Promise.all(c.args.map((a: HostTensor) => backend.upload(a)));
      for (const options of [{}, { deterministic: true }] as CompileOptions[]) {
        const outputs: HostTensor[][] = [];
        const serialized: Uint8Array[] = [];
        for (let i = 0; i < 2; i++) {
          const exe = await backend.compile(c.module, options);
          serialized.push(await backend.serialize(exe));
          const outs = await backend.execute(exe, args);
          outputs.push(await Promise.all(outs.map((o) => backend.download(o))));
          for (const o of outs) o.dispose();
          exe.dispose();
        }
        const [a, b] = outputs as [HostTensor[], HostTensor[]];
        const sameOutputs = a.every((t, i) => sameBytes(t, b[i] as HostTensor));
        const sameExecutable = Buffer.from(serialized[0] ?? []).equals(Buffer.from(serialized[1] ?? []));
        figures.push({
          model: `${c.model} b${c.batch}`,
          deterministic: options.deterministic ?? false,
          sameOutputs,
          sameExecutable,
        });
        if (options.deterministic) expect(sameOutputs).toBe(true);
      }
      for (const b of args) b.dispose();
    }
    // Are debug options in env_option_overrides really read? An unknown one should be refused.
    const c = bundleCases("mlp")[0];
    let unknownOption: Record<string, unknown> = { rejected: false };
    if (c) {
      try {
        const exe = await backend.compile(c.module, { xlaFlags: { xla_gpu_no_such_option_xlaserve: true } });
        exe.dispose();
      } catch (error) {
        unknownOption = { rejected: true, message: String((error as Error).message).slice(0, 300) };
      }
    }
    recordResult("two_compiles", { figures, unknownOption });
  }, 240_000);
});

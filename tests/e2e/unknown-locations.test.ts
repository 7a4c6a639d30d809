/**
 * The PJRT backend compiles modules with their location aliases set to unknown
 * (packages/backend-pjrt/src/module-locations.ts). This checks the rewrite on every example module
 * with a real MLIR parser, the CPU engine's: each rewritten module still parses, and computes the
 * same bytes as the module as exported, on the bundle's reference inputs.
 */
import { describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { loadBundle, openSafetensors, tensorBytes } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { withUnknownLocations } from "../../packages/backend-pjrt/src/module-locations.ts";

const EXAMPLES = resolve(import.meta.dir, "../../examples/models");

describe("modules with unknown locations compute what the exported modules compute", () => {
  for (const model of ["mlp", "cnn", "transformer"]) {
    test(model, async () => {
      const bundle = await loadBundle(join(EXAMPLES, model));
      const backend = await createReactantBackend();
      const reference = openSafetensors(join(bundle.dir, "reference.safetensors"));
      try {
        for (const module of bundle.modules) {
          const exported = { bytes: await module.read(), format: module.format, origin: module.path };
          const rewritten = withUnknownLocations(exported);
          expect(rewritten.bytes.byteLength).toBeLessThan(exported.bytes.byteLength);
          const inputs = bundle.manifest.executableInputs.map((spec) =>
            reference.tensor(`b${module.batchSize}/inputs/${spec.name}`),
          );
          const weights = bundle.weights.argumentOrder.map((name) => bundle.weights.tensor(name));
          const args = await Promise.all([...inputs, ...weights].map((t) => backend.upload(t)));
          const outputs: string[][] = [];
          for (const source of [exported, rewritten]) {
            const exe = await backend.compile(source, {});
            const outs = await backend.execute(exe, args);
            outputs.push(
              await Promise.all(
                outs.map(async (o) => Buffer.from(tensorBytes(await backend.download(o))).toString("hex")),
              ),
            );
            for (const o of outs) o.dispose();
            exe.dispose();
          }
          expect(outputs[1]).toEqual(outputs[0]!);
          for (const a of args) a.dispose();
        }
      } finally {
        await backend.dispose();
      }
    });
  }
});

import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import { createPjrtBackend } from "../../packages/backend-pjrt/src/index.ts";
import { gpuBackend } from "./support/backend.ts";
import { bundleCases } from "./support/bundles.ts";
import { gpuPlugin } from "./support/plugin.ts";
import { recordResult } from "./support/results.ts";

const backend = await gpuBackend();
const MALFORMED =
  "module @broken {\n  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %arg0, %nope : tensor<2xf32>\n";

describe.skipIf(!backend)("bad programs on the GPU", () => {
  test("a malformed module is a clear COMPILE_FAILED and the process stays up", async () => {
    if (!backend) return;
    let caught: unknown;
    try {
      await backend.compile({ bytes: new TextEncoder().encode(MALFORMED), format: "text", origin: "broken.mlir" }, {});
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "COMPILE_FAILED")).toBe(true);
    const message = (caught as Error).message;
    expect(message).toContain("broken.mlir");
    // the backend still works afterwards
    const c = bundleCases("mlp")[0];
    if (!c) throw new Error("no mlp case");
    const exe = await backend.compile(c.module, {});
    expect(exe.outputCount).toBe(2);
    exe.dispose();
    recordResult("malformed_module", { code: "COMPILE_FAILED", message: message.slice(0, 600), processAlive: true });
  });

  test("the same module compiled in a child process fails the same way; a good one loads back", async () => {
    const plugin = await gpuPlugin();
    if ("skip" in plugin) return;
    const isolated = createPjrtBackend({ pluginPath: plugin.path, isolateCompile: true });
    await expect(
      isolated.compile({ bytes: new TextEncoder().encode(MALFORMED), format: "text", origin: "broken.mlir" }, {}),
    ).rejects.toMatchObject({ code: "COMPILE_FAILED" });
    const c = bundleCases("mlp")[0];
    if (!c) throw new Error("no mlp case");
    const t = performance.now();
    const exe = await isolated.compile(c.module, {});
    const childCompileMs = performance.now() - t;
    const args = await Promise.all(c.args.map((a) => isolated.upload(a)));
    const outs = await isolated.execute(exe, args);
    expect(outs.length).toBe(2);
    recordResult("isolated_compile", { model: "mlp b1", childCompileAndLoadMs: Math.round(childCompileMs) });
    await isolated.dispose();
  }, 120_000);
});

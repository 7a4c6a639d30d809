/**
 * The exporter's docstring example runs as written: its `export_bundle(...)` line, with an
 * `apply` and `params` of the shapes it names, writes a bundle the worker loads and runs with
 * XLA's answers. Skips, saying so, where JAX is not installed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadBundle } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";

const TOOLS = resolve(import.meta.dir, "../../tools");
const hasJax = Bun.spawnSync(["python3", "-c", "import jax, numpy"], { stderr: "ignore" }).exitCode === 0;
if (!hasJax) console.warn("exporter docstring test skipped: python3 cannot import jax (pip install jax==0.10.2)");

const dir = mkdtempSync(join(tmpdir(), "xlaserve-export-doc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The library-use lines of the module docstring (the indented block after "Library use:"). */
function docstringExample(): string {
  const source = readFileSync(join(TOOLS, "export_jax_bundle.py"), "utf8");
  const doc = /^"""([\s\S]*?)"""/m.exec(source)?.[1] ?? "";
  const block = /Library use:\n\n((?: {4}.*\n)+)/.exec(doc)?.[1] ?? "";
  return block.replace(/^ {4}/gm, "");
}

describe.skipIf(!hasJax)("tools/export_jax_bundle.py docstring", () => {
  test("the example exports a bundle that loads and runs", async () => {
    const example = docstringExample();
    expect(example).toContain("export_bundle(");
    const out = /"([^"]+)"\s*,\s*batch_sizes/.exec(example)?.[1] ?? "";
    expect(out.length).toBeGreaterThan(0);
    const script = [
      "import sys, jax.numpy as jnp, numpy as np",
      `sys.path.insert(0, ${JSON.stringify(TOOLS)})`,
      // An apply and params that fit the example's one input of shape (64,).
      "params = {'w': np.linspace(-1, 1, 64 * 10, dtype=np.float32).reshape(64, 10), 'b': np.ones(10, np.float32)}",
      "def apply(p, x):\n    return jnp.tanh(x @ p['w'] + p['b'])",
      example,
    ].join("\n");
    const run = Bun.spawnSync(["python3", "-c", script], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    expect(run.stderr.toString()).not.toContain("Traceback");
    expect(run.exitCode).toBe(0);

    const bundle = await loadBundle(join(dir, out));
    expect(bundle.manifest.executableInputs[0]?.dtype).toBe("f32");
    const backend = createReactantBackend();
    const module = bundle.modules.find((m) => m.batchSize === 1);
    if (!module) throw new Error("no batch-1 module");
    const program = await backend.compile({ bytes: await module.read(), format: module.format }, {});
    const weights = await Promise.all(
      bundle.weights.argumentOrder.map((n) => backend.upload(bundle.weights.tensor(n))),
    );
    const x = new Float32Array(64).fill(0.5);
    const input = await backend.upload({ dtype: "f32", shape: [1, 64], data: x });
    const [y] = await backend.execute(program, [input, ...weights]);
    const got = (await backend.download(y as never)).data as Float32Array;
    expect(got.length).toBe(10);
    for (let j = 0; j < 10; j++) {
      let dot = 0;
      for (let i = 0; i < 64; i++) dot += 0.5 * (-1 + (2 * (i * 10 + j)) / 639);
      expect(got[j] as number).toBeCloseTo(Math.tanh(dot + 1), 5);
    }
    await backend.dispose();
  }, 120_000);
});

/**
 * The example models exported twice by tools/export_jax_bundle.py, as StableHLO text and with
 * --portable (MLIR bytecode, the form jax.export and ReactantServer bundles store), served side
 * by side by one CPU worker: over the REST API each portable bundle answers with exactly the
 * bytes of its text twin. Skips, saying so, where JAX is not installed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { openSafetensors } from "@xlaserve/core/bundle/safetensors.ts";
import { isBytecode } from "@xlaserve/stablehlo";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { EXAMPLE_MODELS, collectLogs, inferBinary } from "./helpers.ts";

const EXPORTER = resolve(import.meta.dir, "../../tools/export_jax_bundle.py");
const hasJax = Bun.spawnSync(["python3", "-c", "import jax, flax, safetensors"], { stderr: "ignore" }).exitCode === 0;
if (!hasJax)
  console.warn(
    "portable bundles test skipped: python3 cannot import jax (pip install jax==0.10.2 jaxlib==0.10.2 flax safetensors)",
  );

const root = mkdtempSync(join(tmpdir(), "xlaserve-portable-"));
const repository = join(root, "models");
const logs = collectLogs();
let worker: StartedWorker | undefined;

async function exportBundle(model: string, name: string, portable: boolean): Promise<void> {
  const args = [
    "python3",
    EXPORTER,
    model,
    join(repository, name),
    "--name",
    name,
    ...(portable ? ["--portable"] : []),
  ];
  const proc = Bun.spawn(args, { stdout: "ignore", stderr: "pipe" });
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`${args.join(" ")} failed (${code}): ${err.slice(-2000)}`);
}

function referenceInputs(name: string): Map<number, Map<string, HostTensor>> {
  const file = openSafetensors(join(repository, name, "reference.safetensors"));
  const out = new Map<number, Map<string, HostTensor>>();
  for (const key of file.tensors.keys()) {
    const m = /^b(\d+)\/inputs\/(.+)$/.exec(key);
    if (!m) continue;
    const batch = Number(m[1]);
    if (!out.has(batch)) out.set(batch, new Map());
    const t = file.tensor(key);
    out.get(batch)?.set(m[2] as string, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() });
  }
  return out;
}

afterAll(async () => {
  await worker?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasJax)("portable bundles through the REST API", () => {
  beforeAll(async () => {
    await Promise.all(
      EXAMPLE_MODELS.flatMap((m) => [exportBundle(m, m, false), exportBundle(m, `${m}-portable`, true)]),
    );
    worker = await startCpuWorker({ root, repository, stateDir: join(root, "state"), cleanup: () => {} }, logs.logger, {
      repository: { dynamic: false },
    });
  }, 300_000);

  for (const model of EXAMPLE_MODELS) {
    test(`${model}: the portable export answers with its text twin's bytes at every batch size`, async () => {
      const first = readFileSync(join(repository, `${model}-portable`, "model.b1.mlir"));
      expect(isBytecode(new Uint8Array(first))).toBe(true);
      const cases = referenceInputs(model);
      expect(cases.size).toBeGreaterThan(0);
      for (const [batch, inputs] of cases) {
        const text = await inferBinary(worker?.url ?? "", model, inputs);
        const portable = await inferBinary(worker?.url ?? "", `${model}-portable`, inputs);
        expect([text.status, portable.status, batch]).toEqual([200, 200, batch]);
        expect([...portable.outputs.keys()]).toEqual([...text.outputs.keys()]);
        for (const [name, out] of text.outputs) {
          const other = portable.outputs.get(name);
          const bytes = (t: typeof out) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
          expect(other?.shape).toEqual(out.shape);
          expect(other && bytes(other).equals(bytes(out))).toBe(true);
        }
      }
    }, 120_000);
  }
});

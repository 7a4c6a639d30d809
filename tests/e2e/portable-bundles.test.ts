/**
 * The example models exported twice by tools/export_jax_bundle.py, as StableHLO text and with
 * --portable (MLIR bytecode, the form jax.export and ReactantServer bundles store), served side
 * by side by one CPU worker: over the REST API each portable bundle answers with exactly the
 * bytes of its text twin. Twice: exported here by this machine's jax (skips, saying so, where
 * JAX is not installed), and the committed pairs the GPU host's jax 0.11.2 exported
 * (tests/fixtures/portable-stablehlo-1.18), a newer StableHLO than this machine can produce.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { openSafetensors } from "@xlaserve/core/bundle/safetensors.ts";
import { isBytecode } from "@xlaserve/stablehlo";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { EXAMPLE_MODELS, collectLogs, inferBinary } from "./helpers.ts";

const EXPORTER = resolve(import.meta.dir, "../../tools/export_jax_bundle.py");
/** The python scripts/python-jax.mjs set up (npm run setup runs it), or null where it could not. */
function jaxPython(): string | null {
  const out = Bun.spawnSync(["node", resolve(import.meta.dir, "../../scripts/python-jax.mjs")], { stderr: "ignore" });
  const last = out.stdout.toString().trim().split("\n").pop() ?? "";
  return out.exitCode === 0 && last !== "" ? last : null;
}
const python = jaxPython();
const hasJax = python !== null;
if (!hasJax)
  console.warn(
    "portable bundles test skipped: scripts/python-jax.mjs could set up no Python with jax 0.10.2, flax and safetensors here (no package index reachable?)",
  );

const root = mkdtempSync(join(tmpdir(), "xlaserve-portable-"));
const repository = join(root, "models");
const logs = collectLogs();
let worker: StartedWorker | undefined;

async function exportBundle(model: string, name: string, portable: boolean): Promise<void> {
  const args = [
    python ?? "python3",
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

function referenceInputs(bundle: string): Map<number, Map<string, HostTensor>> {
  const file = openSafetensors(join(bundle, "reference.safetensors"));
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

/** Over REST, the portable bundle answers every reference input with exactly the text one's bytes. */
async function expectTwinBytes(url: string, repo: string, text: string, portable: string): Promise<void> {
  const first = readFileSync(join(repo, portable, "model.b1.mlir"));
  expect(isBytecode(new Uint8Array(first))).toBe(true);
  const cases = referenceInputs(join(repo, text));
  expect(cases.size).toBeGreaterThan(0);
  for (const [batch, inputs] of cases) {
    const a = await inferBinary(url, text, inputs);
    const b = await inferBinary(url, portable, inputs);
    expect([a.status, b.status, batch]).toEqual([200, 200, batch]);
    expect([...b.outputs.keys()]).toEqual([...a.outputs.keys()]);
    for (const [name, out] of a.outputs) {
      const other = b.outputs.get(name);
      const bytes = (t: typeof out) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      expect(other?.shape).toEqual(out.shape);
      expect(other && bytes(other).equals(bytes(out))).toBe(true);
    }
  }
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
      await expectTwinBytes(worker?.url ?? "", repository, model, `${model}-portable`);
    }, 120_000);
  }
});

const FIXTURES = resolve(import.meta.dir, "../fixtures/portable-stablehlo-1.18");

describe("StableHLO 1.18 portable bundles (the GPU host's jax 0.11.2) through the REST API", () => {
  const root118 = mkdtempSync(join(tmpdir(), "xlaserve-portable-118-"));
  const repo118 = join(root118, "models");
  let worker118: StartedWorker | undefined;

  beforeAll(async () => {
    // Each folder served under its own name (the manifests name the model only).
    for (const folder of readdirSync(FIXTURES).filter((f) => !f.includes("."))) {
      cpSync(join(FIXTURES, folder), join(repo118, folder), { recursive: true });
      const manifest = join(repo118, folder, "manifest.yaml");
      writeFileSync(manifest, readFileSync(manifest, "utf8").replace(/^name: .*$/m, `name: "${folder}"`));
    }
    worker118 = await startCpuWorker(
      { root: root118, repository: repo118, stateDir: join(root118, "state"), cleanup: () => {} },
      logs.logger,
      { repository: { dynamic: false } },
    );
  }, 120_000);

  afterAll(async () => {
    await worker118?.stop();
    rmSync(root118, { recursive: true, force: true });
  });

  for (const model of EXAMPLE_MODELS) {
    test(`${model}: the 1.18 portable artifact answers with its text twin's bytes`, async () => {
      const first = readFileSync(join(repo118, `${model}-portable`, "model.b1.mlir"), "latin1");
      expect(first.includes("StableHLO_v1.18")).toBe(true);
      await expectTwinBytes(worker118?.url ?? "", repo118, `${model}-text`, `${model}-portable`);
    }, 120_000);
  }
});

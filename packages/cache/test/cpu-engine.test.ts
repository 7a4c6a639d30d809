import { expect, test } from "bun:test";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  type AbstractBackend,
  type Bundle,
  type BundleModule,
  type Executable,
  loadBundle,
  openSafetensors,
  tensorBytes,
} from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { ProgramCache } from "../src/program-cache.ts";
import type { CacheWarning } from "../src/warnings.ts";
import { tempDir } from "./support/fixtures.ts";

const EXAMPLES = resolve(import.meta.dir, "../../../examples/models");
const options = { deterministic: true };

/** Runs a program on the bundle's reference inputs plus its weights; returns each output's bytes. */
async function run(
  backend: AbstractBackend,
  bundle: Bundle,
  module: BundleModule,
  exe: Executable,
): Promise<Uint8Array[]> {
  const reference = openSafetensors(join(bundle.dir, "reference.safetensors"));
  const inputs = bundle.manifest.executableInputs.map((spec) =>
    reference.tensor(`b${module.batchSize}/inputs/${spec.name}`),
  );
  const weights = bundle.weights.argumentOrder.map((name) => bundle.weights.tensor(name));
  const args = await Promise.all([...inputs, ...weights].map((t) => backend.upload(t)));
  const outs = await backend.execute(exe, args);
  const bytes = await Promise.all(outs.map(async (o) => tensorBytes(await backend.download(o)).slice()));
  for (const b of [...args, ...outs]) b.dispose();
  return bytes;
}

/** The fresh program is the right program: its outputs match JAX's reference within f32 noise. */
function expectCloseToReference(bundle: Bundle, module: BundleModule, outs: Uint8Array[]): void {
  const reference = openSafetensors(join(bundle.dir, "reference.safetensors"));
  bundle.manifest.executableOutputs.forEach((spec, i) => {
    const want = reference.tensor(`b${module.batchSize}/outputs/${spec.name}`).data as Float32Array;
    const got = new Float32Array(outs[i]!.buffer, outs[i]!.byteOffset, outs[i]!.byteLength / 4);
    expect(got.length).toBe(want.length);
    for (let j = 0; j < got.length; j++)
      expect(Math.abs(got[j]! - want[j]!)).toBeLessThan(1e-3 + 1e-3 * Math.abs(want[j]!));
  });
}

async function freshVsCached(model: string): Promise<void> {
  using tmp = tempDir();
  cpSync(join(EXAMPLES, model), join(tmp.path, model), { recursive: true, filter: (s) => !s.endsWith(".cache") });
  const bundle = await loadBundle(join(tmp.path, model));
  const warnings: CacheWarning[] = [];
  const stateDir = join(tmp.path, "state");
  const fresh = new Map<string, Uint8Array[]>();

  const engine1 = await createReactantBackend();
  const cache1 = await ProgramCache.open({ stateDir, onWarning: (w) => warnings.push(w) });
  cache1.syncModuleHashes(bundle);
  for (const module of bundle.modules) {
    const r = await cache1.getOrCompile({ bundle, module, backend: engine1, options });
    expect(r.outcome).toBe("miss");
    const outs = await run(engine1, bundle, module, r.executable);
    expectCloseToReference(bundle, module, outs);
    fresh.set(module.file, outs);
    r.executable.dispose();
  }
  cache1.close();
  await engine1.dispose();

  // A restart: new engine, new cache handle, same files.
  const engine2 = await createReactantBackend();
  const cache2 = await ProgramCache.open({ stateDir, onWarning: (w) => warnings.push(w) });
  cache2.syncModuleHashes(bundle);
  for (const module of bundle.modules) {
    const r = await cache2.getOrCompile({ bundle, module, backend: engine2, options });
    expect(r.outcome).toBe("hit");
    const cached = await run(engine2, bundle, module, r.executable);
    const expected = fresh.get(module.file)!;
    expect(cached.length).toBe(expected.length);
    // ARCHITECTURE rule 6: byte-identical, not merely close.
    for (const [i, bytes] of cached.entries()) {
      expect(Buffer.from(bytes).equals(Buffer.from(expected[i]!))).toBe(true);
    }
    r.executable.dispose();
  }
  expect(cache2.counters).toMatchObject({ hits: bundle.modules.length, compiles: 0 });
  cache2.close();
  await engine2.dispose();
  expect(warnings).toEqual([]);
}

for (const model of ["mlp", "cnn", "transformer"]) {
  test(`CPU engine, ${model}: a program loaded from the cache gives the fresh program's exact bytes`, () =>
    freshVsCached(model));
}

test("CPU engine, mlp: 20 flipped bytes in a stored plan are each caught and recompiled to the same outputs", async () => {
  using tmp = tempDir();
  cpSync(join(EXAMPLES, "mlp"), join(tmp.path, "mlp"), { recursive: true, filter: (s) => !s.endsWith(".cache") });
  const bundle = await loadBundle(join(tmp.path, "mlp"));
  const module = bundle.modules[0]!;
  const warnings: CacheWarning[] = [];
  const engine = createReactantBackend();
  const cache = await ProgramCache.open({ stateDir: join(tmp.path, "state"), onWarning: (w) => warnings.push(w) });
  const first = await cache.getOrCompile({ bundle, module, backend: engine, options });
  const expected = await run(engine, bundle, module, first.executable);
  const good = readFileSync(first.entryPath);
  let seed = 17;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let k = 0; k < 20; k++) {
    // The header is the first few hundred bytes: aim a quarter of the flips there.
    const offset = k % 4 === 0 ? Math.floor(rand() * 300) : Math.floor(rand() * good.length);
    const bad = new Uint8Array(good);
    bad[offset]! ^= 0x10;
    writeFileSync(first.entryPath, bad);
    const r = await cache.getOrCompile({ bundle, module, backend: engine, options });
    expect(r.outcome, `offset ${offset}`).toBe("recompiled");
    const outs = await run(engine, bundle, module, r.executable);
    for (const [i, bytes] of outs.entries()) expect(Buffer.from(bytes).equals(Buffer.from(expected[i]!))).toBe(true);
    r.executable.dispose();
  }
  expect(warnings.length).toBe(20);
  cache.close();
  await engine.dispose();
});

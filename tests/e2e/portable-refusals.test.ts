/**
 * Portable artifacts in a worker's repository, with no JAX needed: the MLP with its b1 module
 * replaced by the portable artifact jax.export wrote for it (tests/fixtures), beside bundles
 * whose artifact is truncated, corrupt, or from a newer StableHLO than the reader knows. The
 * good ones serve (the portable b1 with the text MLP's exact bytes), each bad one is
 * UNAVAILABLE with a reason naming its file, the offset and what was expected there, and a
 * restarted worker loads the portable program from the cache, keyed by the artifact's content.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, copyBundle, inferBinary, makeRepo, readReference } from "./helpers.ts";

const ARTIFACT = resolve(import.meta.dir, "../fixtures/mlp_portable_b1.mlirbc");
const FUTURE = resolve(import.meta.dir, "../../../shared/vhlo/invalid_vhlo_future.mlir.bc");
const hasFuture = existsSync(FUTURE);
if (!hasFuture) console.warn(`portable refusals: ${FUTURE} is missing, so the newer-StableHLO bundle is left out`);

let repo: TempRepo;
let worker: StartedWorker | undefined;
const logs = collectLogs();

interface IndexEntry {
  name: string;
  state: string;
  reason: string;
}

async function index(): Promise<IndexEntry[]> {
  const res = await fetch(`${(worker as StartedWorker).url}/v2/repository/index`, { method: "POST", body: "{}" });
  return (await res.json()) as IndexEntry[];
}

/** The MLP bundle under another name, its b1 module replaced by `bytes`. */
function withModule(name: string, bytes: Uint8Array): void {
  const dir = join(repo.repository, name);
  copyBundle("mlp", dir);
  const manifest = join(dir, "manifest.yaml");
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace('name: "mlp"', `name: "${name}"`));
  writeFileSync(join(dir, "model.b1.mlir"), bytes);
}

beforeAll(async () => {
  repo = makeRepo(["mlp"]);
  const artifact = new Uint8Array(readFileSync(ARTIFACT));
  withModule("mlp-portable", artifact);
  withModule("truncated", artifact.subarray(0, Math.floor(artifact.length / 2)));
  const corrupt = artifact.slice();
  corrupt[4] = 7 * 2 + 1; // bytecode format version 7: newer than MLIR's 6
  withModule("newer-format", corrupt);
  if (hasFuture) withModule("newer-stablehlo", new Uint8Array(readFileSync(FUTURE)));
  worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: false } });
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

describe("portable artifacts in the repository", () => {
  test("the portable MLP serves with the text MLP's bytes; the bad artifacts are refused, naming file, offset and expectation", async () => {
    const entries = await index();
    const state = (name: string) => entries.find((e) => e.name === name);
    expect(state("mlp")?.state).toBe("READY");
    expect(state("mlp-portable")?.state).toBe("READY");
    const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
    const url = (worker as StartedWorker).url;
    const [text, portable] = [await inferBinary(url, "mlp", inputs), await inferBinary(url, "mlp-portable", inputs)];
    expect(portable.status).toBe(200);
    const bytesOf = (o: { data: ArrayBufferView } | undefined) =>
      o ? Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength) : Buffer.alloc(0);
    const expected = bytesOf(text.outputs.get("probabilities"));
    expect(expected.length).toBe(4 * 10);
    expect(bytesOf(portable.outputs.get("probabilities")).equals(expected)).toBe(true);

    const refused: [string, RegExp][] = [
      [
        "truncated",
        /model\.b1\.mlir: is not a readable StableHLO portable artifact: invalid MLIR bytecode at offset \d+: expected /,
      ],
      [
        "newer-format",
        /model\.b1\.mlir: .*at offset 4: expected a bytecode format version of at most 6, found version 7/,
      ],
    ];
    if (hasFuture) refused.push(["newer-stablehlo", /model\.b1\.mlir: .*StableHLO 2\.0\.0, newer than 1\.20\.0.*/]);
    for (const [name, reason] of refused) {
      expect(state(name)?.state).toBe("UNAVAILABLE");
      expect(state(name)?.reason).toMatch(reason);
      expect((await inferBinary(url, name, inputs)).status).not.toBe(200);
    }
  }, 60_000);

  test("a restarted worker loads the portable program from the cache", async () => {
    await worker?.stop();
    const before = logs.find("model loaded").length;
    worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: false } });
    const loaded = logs
      .find("model loaded")
      .slice(before)
      .find((l) => l.model === "mlp-portable") as { programs: { file: string; cache: string }[] } | undefined;
    expect(loaded?.programs.find((p) => p.file === "model.b1.mlir")?.cache).toBe("hit");
    const inputs = readReference("mlp").get(1)?.inputs ?? new Map();
    expect((await inferBinary(worker.url, "mlp-portable", inputs)).status).toBe(200);
  }, 120_000);
});

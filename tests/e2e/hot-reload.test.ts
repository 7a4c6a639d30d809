/**
 * The dynamic model repository over real HTTP on the real CPU engine: hot reload under load (zero
 * failed requests, answers switch to the new version), a broken replacement, removal, and renames
 * (in place; or through the program cache when the manifest is edited too: no recompile).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import {
  type TempRepo,
  collectLogs,
  copyBundle,
  inferJson,
  makeRepo,
  readReference,
  scaleWeights,
  waitFor,
} from "./helpers.ts";

let repo: TempRepo;
let worker: StartedWorker;
const logs = collectLogs();
const mlpInputs = (): Map<string, HostTensor> => readReference("mlp").get(1)?.inputs ?? new Map();

async function logits(model = "mlp"): Promise<number[]> {
  const res = await inferJson(worker.url, model, mlpInputs());
  if (res.status !== 200) throw new Error(`${model}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.outputs.get("logits")?.data ?? [];
}

async function index(): Promise<Array<{ name: string; state: string; reason: string }>> {
  const res = await fetch(`${worker.url}/v2/repository/index`, { method: "POST", body: "{}" });
  return (await res.json()) as Array<{ name: string; state: string; reason: string }>;
}

beforeAll(async () => {
  repo = makeRepo(["mlp"]);
  worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: true, pollIntervalMs: 50 } });
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

describe("hot reload on the CPU engine", () => {
  test("replacement under load: zero failed requests and answers switch to the new version", async () => {
    const old = await logits();
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const answers: number[] = [];
    const clients = [0, 1, 2].map(async () => {
      while (!stop) {
        try {
          const l = await logits();
          answers.push(l[0] as number);
          ok++;
        } catch (err) {
          failures.push(String(err));
        }
      }
    });
    await Bun.sleep(100);
    scaleWeights(join(repo.repository, "mlp"), 5); // the new version: biases x5
    // Versions are told apart by a clear margin: a request coalesced into the batch-8 program may
    // differ from the batch-1 program's answer in the last bits.
    const same = (a: number, b: number) => Math.abs(a - b) <= 1e-5 * Math.abs(b) + 1e-6;
    const fresh = await waitFor(async () => {
      const l = await logits();
      return same(l[0] as number, old[0] as number) ? null : l;
    }, 120_000);
    await Bun.sleep(100);
    stop = true;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(10);
    const kinds = answers.map((a) =>
      same(a, old[0] as number) ? "old" : same(a, fresh[0] as number) ? "new" : "other",
    );
    expect(kinds).not.toContain("other");
    expect(kinds).toContain("old");
    expect(kinds.at(-1)).toBe("new");
    // Once the new version answered, the old one never did again (the swap is atomic).
    expect(kinds.slice(kinds.indexOf("new"))).not.toContain("old");
    expect(logs.find("model reloaded").length).toBe(1);
    expect(logs.find("weight budget resolved").map((l) => l.cause)).toContain("replace");
    // A weights-only update keeps every compiled program (ARCHITECTURE rule 3).
    expect(logs.find("model reloaded")[0]?.cache).toBe("2/2 hit");
  }, 180_000);

  test("a broken replacement leaves the old version serving, its error in the index", async () => {
    const before = await logits();
    const reloadsBefore = logs.find("model reload failed").length;
    const file = join(repo.repository, "mlp", "model.b1.mlir");
    const original = readFileSync(file, "utf8");
    writeFileSync(file, original.replace("func.func", "func.fnuc"));
    await waitFor(() => logs.find("model reload failed").length > reloadsBefore, 60_000);
    const entry = (await index()).find((e) => e.name === "mlp");
    expect(entry?.state).toBe("READY");
    expect(entry?.reason).toContain("reload failed");
    expect(await logits()).toEqual(before);
    writeFileSync(file, original); // repaired: reloads and clears the reason
    await waitFor(async () => (await index()).find((e) => e.name === "mlp")?.reason === "", 120_000);
  }, 180_000);

  test("a pure folder rename renames the model in place, nothing recompiled", async () => {
    const before = await logits();
    renameSync(join(repo.repository, "mlp"), join(repo.repository, "mlp_renamed"));
    await waitFor(() => logs.find("model renamed").length > 0, 30_000);
    expect(await logits("mlp_renamed")).toEqual(before);
    expect((await inferJson(worker.url, "mlp", mlpInputs())).status).toBe(404);
    renameSync(join(repo.repository, "mlp_renamed"), join(repo.repository, "mlp"));
    await waitFor(() => logs.find("model renamed").length > 1, 30_000);
  }, 60_000);

  test("rename with the manifest edited loads through the program cache: every program a hit", async () => {
    const before = await logits();
    const from = join(repo.repository, "mlp");
    const to = join(repo.repository, "mlp_v2");
    renameSync(from, to);
    const manifest = join(to, "manifest.yaml");
    writeFileSync(manifest, readFileSync(manifest, "utf8").replace('name: "mlp"', 'name: "mlp_v2"'));
    const line = await waitFor(() => logs.find("model loaded").find((l) => l.model === "mlp_v2"), 60_000);
    expect(line.cache).toBe("2/2 hit");
    expect(await logits("mlp_v2")).toEqual(before);
    await waitFor(async () => !(await index()).some((e) => e.name === "mlp"), 30_000);
  }, 90_000);

  test("a new bundle is loaded and a removed one unloaded after draining; the budget follows", async () => {
    copyBundle("cnn", join(repo.repository, "cnn"));
    await waitFor(async () => (await index()).find((e) => e.name === "cnn")?.state === "READY", 120_000);
    const causes = () => logs.find("weight budget resolved").map((l) => l.cause);
    expect(causes()).toContain("load");
    const cnnRef = readReference("cnn").get(4);
    const inflight = inferJson(worker.url, "cnn", cnnRef?.inputs ?? new Map());
    rmSync(join(repo.repository, "cnn"), { recursive: true });
    expect((await inflight).status).toBe(200);
    await waitFor(async () => !(await index()).some((e) => e.name === "cnn"), 30_000);
    expect(causes()).toContain("remove");
    expect((await inferJson(worker.url, "cnn", cnnRef?.inputs ?? new Map())).status).toBe(404);
  }, 180_000);
});

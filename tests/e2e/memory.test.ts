/**
 * Device memory on the real CPU engine (issue 7), over real HTTP: with a limit that holds two of
 * the three examples' weights, a round-robin client gets reference answers from every model while
 * the LRU evicts and reloads weights on demand (no request fails); a model whose weights alone
 * exceed the pool is refused with its reason in the index.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { EXAMPLE_MODELS, type TempRepo, collectLogs, inferJson, makeRepo, readReference } from "./helpers.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function start(
  repo: TempRepo,
  memory: Record<string, unknown>,
): Promise<{ worker: StartedWorker; logs: ReturnType<typeof collectLogs> }> {
  const logs = collectLogs();
  const worker = await startCpuWorker(repo, logs.logger, {
    repository: { dynamic: false },
    memory: { weightFraction: 1, wiggle: 0, ...memory },
  });
  cleanups.push(() => worker.stop());
  return { worker, logs };
}

/** Weight and scratch figures of the examples, measured by a first worker without a limit. */
async function measure(repo: TempRepo) {
  const { worker } = await start(repo, {});
  const weights = Object.fromEntries(worker.registry.models().map((m) => [m.name, m.weightBytes])) as Record<
    string,
    number
  >;
  const maxScratch = worker.registry.currentBudget()?.maxScratchBytes ?? 0;
  await worker.stop();
  return { weights, maxScratch };
}

function close(actual: number[], expected: HostTensor): boolean {
  const e = expected.data as Float32Array;
  return (
    actual.length === e.length &&
    actual.every((a, i) => Math.abs(a - (e[i] as number)) <= 1e-5 * Math.abs(e[i] as number) + 1e-6)
  );
}

describe("weight budget on the CPU engine", () => {
  test("LRU eviction and on-demand reload under a round-robin load: every answer matches the reference", async () => {
    const repo = makeRepo();
    cleanups.push(() => repo.cleanup());
    const { weights, maxScratch } = await measure(repo);
    const w = (n: string) => weights[n] ?? 0;
    // A pool that holds the two largest models' weights but not all three.
    const largestTwo = [...Object.values(weights)]
      .sort((a, b) => b - a)
      .slice(0, 2)
      .reduce((a, b) => a + b, 0);
    const limit = maxScratch + largestTwo + Math.floor(Math.min(...Object.values(weights)) / 2);
    const { worker, logs } = await start(repo, { limitBytes: limit });
    const budget = worker.registry.currentBudget();
    expect(budget?.poolBytes).toBe(limit - maxScratch);
    expect(budget?.onDemandBytes).toBeLessThan(w("mlp") + w("cnn") + w("transformer"));
    const refs = Object.fromEntries(EXAMPLE_MODELS.map((m) => [m, readReference(m).get(1)])) as Record<
      string,
      ReturnType<typeof readReference> extends Map<number, infer V> ? V : never
    >;
    let failures = 0;
    let mismatches = 0;
    for (let round = 0; round < 6; round++) {
      for (const model of EXAMPLE_MODELS) {
        const ref = refs[model];
        if (!ref) throw new Error(model);
        const res = await inferJson(worker.url, model, ref.inputs);
        if (res.status !== 200) {
          failures++;
          continue;
        }
        for (const [name, expected] of ref.outputs)
          if (!close(res.outputs.get(name)?.data ?? [], expected)) mismatches++;
      }
    }
    expect(failures).toBe(0);
    expect(mismatches).toBe(0);
    const evicted = logs.find("weights evicted").map((l) => l.model);
    expect(evicted.length).toBeGreaterThanOrEqual(6);
    const metrics = await (await fetch(`${worker.url}/metrics`)).text();
    expect(metrics).toMatch(/worker_weight_evicts_total\{model="(mlp|cnn|transformer)"\} [1-9]/);
    expect(worker.registry.weights.residentOnDemandBytes).toBeLessThanOrEqual(budget?.onDemandBytes ?? 0);
    // Visible in the metadata: the most recent model is resident, an LRU victim is not.
    const resident = (await (await fetch(`${worker.url}/v2/models/transformer`)).json()) as Record<string, unknown>;
    expect(JSON.stringify(resident)).toContain('"resident":true');
  }, 240_000);

  test("a model whose weights alone exceed the pool is refused (UNAVAILABLE, reason in the index); the others serve", async () => {
    const repo = makeRepo();
    cleanups.push(() => repo.cleanup());
    const { weights, maxScratch } = await measure(repo);
    const biggest = Object.entries(weights).sort((a, b) => b[1] - a[1])[0] as [string, number];
    const second = Object.values(weights).sort((a, b) => b - a)[1] as number;
    const limit = maxScratch + Math.floor((biggest[1] + second) / 2); // pool between the two largest
    const { worker, logs } = await start(repo, { limitBytes: limit });
    const index = (await (
      await fetch(`${worker.url}/v2/repository/index`, { method: "POST", body: "{}" })
    ).json()) as Array<{
      name: string;
      state: string;
      reason: string;
    }>;
    const refused = index.find((e) => e.name === biggest[0]);
    expect(refused?.state).toBe("UNAVAILABLE");
    expect(refused?.reason).toContain("exceed the weight pool");
    expect(logs.find("model refused").length).toBe(1);
    for (const e of index.filter((x) => x.name !== biggest[0])) expect(e.state).toBe("READY");
    const ref = readReference(biggest[0]).get(1);
    const res = await inferJson(worker.url, biggest[0], ref?.inputs ?? new Map());
    expect([404, 503]).toContain(res.status);
    const other = EXAMPLE_MODELS.find((m) => m !== biggest[0]) as string;
    expect((await inferJson(worker.url, other, readReference(other).get(1)?.inputs ?? new Map())).status).toBe(200);
  }, 240_000);

  test("pinned residency: weights stay resident, count against the pool, never evicted", async () => {
    const repo = makeRepo(["mlp", "cnn"]);
    cleanups.push(() => repo.cleanup());
    const { worker } = await start(repo, { residency: { mlp: "pinned" }, defaultResidency: "host" });
    const b = worker.registry.currentBudget();
    const mlp = worker.registry.models().find((m) => m.name === "mlp");
    expect(b?.pinnedBytes).toBe(mlp?.weightBytes as number);
    const cnnRef = readReference("cnn").get(1);
    for (let i = 0; i < 3; i++)
      expect((await inferJson(worker.url, "cnn", cnnRef?.inputs ?? new Map())).status).toBe(200);
    const meta = (await (await fetch(`${worker.url}/v2/models/cnn`)).json()) as Record<string, unknown>;
    const text = JSON.stringify(meta);
    expect(text).toContain('"residency":"host"');
    expect(text).toContain('"resident":false'); // host weights come for one request and go
    expect(mlp?.extra().resident).toBe(true);
  }, 240_000);
});

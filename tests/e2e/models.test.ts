/**
 * Every example model through JSON and binary requests over real HTTP on the real CPU engine,
 * compared with its reference outputs (XLA on CPU): within 1e-5 relative (+1e-6 absolute for
 * values near zero).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import {
  EXAMPLE_MODELS,
  type TempRepo,
  collectLogs,
  inferBinary,
  inferJson,
  makeRepo,
  readReference,
} from "./helpers.ts";

const REL = 1e-5;
const ABS = 1e-6;

function expectClose(name: string, actual: ArrayLike<number>, expected: HostTensor): void {
  const e = expected.data as Float32Array;
  expect(actual.length).toBe(e.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < e.length; i++) {
    const err = Math.abs(Number(actual[i]) - Number(e[i]));
    const allowed = REL * Math.abs(Number(e[i])) + ABS;
    if (err / allowed > worst) {
      worst = err / allowed;
      at = i;
    }
  }
  if (worst > 1) {
    throw new Error(`${name}: element ${at} is ${actual[at]}, reference ${e[at]} (${worst.toFixed(1)}x the tolerance)`);
  }
}

let repo: TempRepo;
let worker: StartedWorker;
const logs = collectLogs();

beforeAll(async () => {
  repo = makeRepo();
  worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: false } });
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

describe("example models over HTTP on the CPU engine", () => {
  for (const model of EXAMPLE_MODELS) {
    const reference = readReference(model);
    for (const [batch, ref] of reference) {
      test(`${model} b${batch}: JSON request matches the reference`, async () => {
        const res = await inferJson(worker.url, model, ref.inputs, { id: `${model}-${batch}` });
        expect(res.status).toBe(200);
        expect(res.body.id).toBe(`${model}-${batch}`);
        for (const [name, expected] of ref.outputs) {
          const out = res.outputs.get(name);
          expect(out?.shape).toEqual([...expected.shape]);
          expectClose(`${model} b${batch} ${name} (JSON)`, out?.data ?? [], expected);
        }
      });
      test(`${model} b${batch}: binary request matches the reference`, async () => {
        const res = await inferBinary(worker.url, model, ref.inputs);
        expect(res.error ?? "").toBe("");
        expect(res.status).toBe(200);
        for (const [name, expected] of ref.outputs) {
          const out = res.outputs.get(name);
          expect(out?.shape).toEqual([...expected.shape]);
          expectClose(`${model} b${batch} ${name} (binary)`, out?.data ?? [], expected);
        }
      });
    }
  }

  test("a batch between compiled sizes is padded up and the padding stripped", async () => {
    const ref = readReference("mlp").get(8);
    if (!ref) throw new Error("no mlp b8 reference");
    const rows = 3;
    const x = ref.inputs.get("features") as HostTensor;
    const inputs = new Map([
      [
        "features",
        { dtype: "f32", shape: [rows, 64], data: (x.data as Float32Array).slice(0, rows * 64) } as HostTensor,
      ],
    ]);
    const res = await inferJson(worker.url, "mlp", inputs);
    expect(res.status).toBe(200);
    for (const [name, expected] of ref.outputs) {
      const out = res.outputs.get(name);
      expect(out?.shape).toEqual([rows, 10]);
      const head: HostTensor = {
        dtype: "f32",
        shape: [rows, 10],
        data: (expected.data as Float32Array).slice(0, rows * 10),
      };
      expectClose(`mlp b3 ${name}`, out?.data ?? [], head);
    }
  });

  test("device work never blocks the event loop (the CPU engine runs on its own thread)", async () => {
    const model = worker.registry.getModel("cnn");
    const inputs = readReference("cnn").get(4)?.inputs;
    if (!model || !inputs) throw new Error("no cnn");
    let last = performance.now();
    let maxLag = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxLag = Math.max(maxLag, now - last);
      last = now;
    }, 1);
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 16 }, () => model.infer({ inputs })));
    const elapsed = performance.now() - t0;
    maxLag = Math.max(maxLag, performance.now() - last);
    clearInterval(timer);
    // Run on the event loop, the 16 runs would block it for about their whole duration.
    expect(maxLag).toBeLessThan(Math.max(elapsed / 2, 20));
  });

  test("each model's load line reports cache outcome, time and memory", () => {
    const loaded = logs.find("model loaded");
    expect(loaded.map((l) => l.model).sort()).toEqual([...EXAMPLE_MODELS].sort());
    for (const l of loaded) {
      expect(String(l.cache)).toMatch(/\d+\/\d+ hit/);
      expect(typeof l.ms).toBe("number");
      expect(l.weightBytes).toBeGreaterThan(0);
    }
    expect(logs.find("weight budget resolved").length).toBe(1);
  });

  test("model metadata and the repository index carry the memory figures", async () => {
    const meta = (await (await fetch(`${worker.url}/v2/models/cnn`)).json()) as Record<string, unknown>;
    const text = JSON.stringify(meta);
    for (const key of ["residency", "weightBytes", "scratchBytes", "budget", "resident"]) expect(text).toContain(key);
    const index = (await (
      await fetch(`${worker.url}/v2/repository/index`, { method: "POST", body: "{}" })
    ).json()) as Array<{ name: string; state: string }>;
    expect(index.map((e) => e.state)).toEqual(["READY", "READY", "READY"]);
  });
});

/**
 * Inline runs over real HTTP on the real CPU engine (apps/worker/src/inline/inline-runs.ts): once the
 * MLP has answered enough requests its programs run on the HTTP thread, and every answer, JSON
 * and binary, is the same bytes as the engine thread gave before; the CNN, far over the
 * threshold, stays on the engine thread.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { INLINE_AFTER_REQUESTS } from "../../apps/worker/src/model/runtime-model.ts";
import { type TempRepo, collectLogs, f32BinaryBody, f32JsonBody, makeRepo, readReference, waitFor } from "./helpers.ts";

let repo: TempRepo;
let worker: StartedWorker;
const logs = collectLogs();

beforeAll(async () => {
  repo = makeRepo(["mlp", "cnn"]);
  // Well above the MLP's run even on a busy test machine, so that its programs qualify for sure.
  worker = await startCpuWorker(repo, logs.logger, { repository: { dynamic: false } }, { inlineMaxUs: 5000 });
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

/** Every answer of interest, as raw bytes: JSON at batch 1, 3 and 8, binary at batch 8. */
async function answers(): Promise<string[]> {
  const ref = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
  const out: string[] = [];
  for (const rows of [1, 3, 8]) {
    const x: HostTensor = { dtype: "f32", shape: [rows, 64], data: (ref.data as Float32Array).slice(0, rows * 64) };
    const res = await fetch(`${worker.url}/v2/models/mlp/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: f32JsonBody(new Map([["features", x]]), `b${rows}`),
    });
    expect(res.status).toBe(200);
    out.push(await res.text());
  }
  const { body, headerLength } = f32BinaryBody(new Map([["features", ref]]));
  const res = await fetch(`${worker.url}/v2/models/mlp/infer`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(headerLength) },
    body,
  });
  expect(res.status).toBe(200);
  out.push(Buffer.from(await res.arrayBuffer()).toString("base64"));
  return out;
}

describe("inline runs over HTTP (CPU engine)", () => {
  test("a busy MLP runs inline and answers the same bytes as on the engine thread; the CNN stays there", async () => {
    const before = await answers();
    const meta = async (model: string) =>
      ((await (await fetch(`${worker.url}/v2/models/${model}`)).json()) as { xlaserve: { inline: unknown } }).xlaserve
        .inline as { programs: Array<{ program: string; inline: boolean }> } | null;
    expect(await meta("mlp")).toBeNull();
    const one = readReference("mlp").get(1)?.inputs as Map<string, HostTensor>;
    const body = f32JsonBody(one, "warm");
    for (let i = 0; i < INLINE_AFTER_REQUESTS; i += 16) {
      await Promise.all(
        Array.from({ length: 16 }, () =>
          fetch(`${worker.url}/v2/models/mlp/infer`, { method: "POST", body }).then((r) => r.arrayBuffer()),
        ),
      );
    }
    await waitFor(() => logs.find("inline runs").length > 0, 60_000);
    const inline = await meta("mlp");
    expect(inline?.programs.map((p) => [p.program, p.inline])).toEqual([
      ["b1", true],
      ["b8", true],
    ]);
    expect(await answers()).toEqual(before);
    expect(await meta("cnn")).toBeNull();
  }, 120_000);
});

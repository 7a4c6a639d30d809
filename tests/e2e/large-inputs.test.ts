/**
 * Large binary inputs on their way to the engine's thread, over real HTTP on the CPU engine: a
 * request body's floats (and one execution's joined rows) are handed to the engine thread without
 * a copy, whether the binary section starts aligned or not, alone or coalesced, and every answer
 * is still its own request's. /metrics counts the bytes moved and copied.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, makeRepo, waitFor } from "./helpers.ts";
import { writeRowReduceBundle } from "./row-reduce-bundle.ts";

/** Floats per row: 64 KiB, the size from which inputs travel in buffers of their own. */
const N = 16384;

const repo: TempRepo = makeRepo([]);
writeRowReduceBundle(join(repo.repository, "rowsum"), { name: "rowsum", n: N, batchSizes: [1, 4], program: "sum" });
const logs = collectLogs();
afterAll(() => repo.cleanup());

/** Row r holds small integers (exact sums in f32) offset by `seed`; the sums a request expects. */
function rows(count: number, seed: number): { values: Float32Array; sums: number[] } {
  const values = new Float32Array(count * N);
  const sums: number[] = [];
  for (let r = 0; r < count; r++) {
    let s = 0;
    for (let i = 0; i < N; i++) {
      const v = ((i + r + seed) % 5) - 2 + seed;
      values[r * N + i] = v;
      s += v;
    }
    sums.push(s);
  }
  return { values, sums };
}

/** A binary request whose JSON header is padded to `headerPad` mod 8 bytes (0: the floats start aligned). */
async function post(w: StartedWorker, values: Float32Array, headerPad: number): Promise<number[]> {
  let header = JSON.stringify({
    inputs: [
      {
        name: "x",
        datatype: "FP32",
        shape: [values.length / N, N],
        parameters: { binary_data_size: values.byteLength },
      },
    ],
    parameters: { binary_data_output: true },
  });
  while (new TextEncoder().encode(header).byteLength % 8 !== headerPad) header += " ";
  const head = new TextEncoder().encode(header);
  const body = new Uint8Array(head.byteLength + values.byteLength);
  body.set(head);
  body.set(new Uint8Array(values.buffer), head.byteLength);
  const res = await fetch(`${w.url}/v2/models/rowsum/infer`, {
    method: "POST",
    body,
    headers: { "inference-header-content-length": String(head.byteLength), "content-type": "application/octet-stream" },
  });
  expect(res.status).toBe(200);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const length = Number(res.headers.get("inference-header-content-length"));
  const copy = bytes.slice(length);
  return Array.from(new Float32Array(copy.buffer));
}

async function inputBytes(w: StartedWorker): Promise<{ moved: number; copied: number }> {
  const text = await (await fetch(`${w.url}/metrics`)).text();
  const read = (how: string) => {
    const m = new RegExp(`^worker_engine_input_bytes_total\\{how="${how}"\\} (\\S+)$`, "m").exec(text);
    if (!m) throw new Error(`no worker_engine_input_bytes_total{how="${how}"} in /metrics`);
    return Number(m[1]);
  };
  return { moved: read("moved"), copied: read("copied") };
}

describe("large binary inputs reach the engine thread without a copy", () => {
  test.each([
    ["coalescing off", false],
    ["coalescing on", true],
  ])("%s: aligned and unaligned bodies, alone and together, each answered with its own sums", async (_, coalesce) => {
    const w = await startCpuWorker(
      repo,
      logs.logger,
      { repository: { dynamic: false }, concurrency: { dynamicBatching: coalesce } },
      // Every run on the engine thread (a short program could otherwise move inline).
      { inlineMaxUs: 0 },
    );
    try {
      // The batch-invariance check at load runs its own rows (copied: they are not a request's).
      await waitFor(() => w.registry.models()[0]?.batchInvariance);
      const before = await inputBytes(w);
      const single = rows(1, 0);
      expect(await post(w, single.values, 0)).toEqual(single.sums);
      expect(await post(w, single.values, 3)).toEqual(single.sums);
      const two = rows(2, 1);
      expect(await post(w, two.values, 5)).toEqual(two.sums);
      // Several at once: coalesced (joined and padded into one buffer) when coalescing is on.
      const many = [rows(1, 2), rows(2, 3), rows(1, 4)];
      const answers = await Promise.all(many.map((m, i) => post(w, m.values, i)));
      for (const [i, a] of answers.entries()) expect(a).toEqual((many[i] as { sums: number[] }).sums);
      const after = await inputBytes(w);
      const sent = (1 + 1 + 2 + 1 + 2 + 1) * N * 4;
      // Every byte went over moved; none was copied on the way (joined rows are new, movable buffers).
      expect(after.moved - before.moved).toBeGreaterThanOrEqual(sent);
      expect(after.copied - before.copied).toBe(0);
    } finally {
      await w.stop();
    }
  });
});

/**
 * Several HTTP threads on one port (config server.httpThreads, apps/worker/src/http-threads/): over real
 * HTTP on the real CPU engine, with a fresh connection per request so the kernel spreads them over
 * every thread. Each thread answers the MLP itself once it runs inline, with the engine thread's
 * bytes; every other request is relayed to the main thread and answered as it would be there;
 * metrics and statistics count each request once; a reload and an unload reach every thread; stop
 * closes the port on all of them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameSync } from "node:fs";
import { join } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { INLINE_AFTER_REQUESTS } from "../../apps/worker/src/model/runtime-model.ts";
import {
  type TempRepo,
  collectLogs,
  f32BinaryBody,
  f32JsonBody,
  makeRepo,
  readReference,
  scaleWeights,
  waitFor,
} from "./helpers.ts";

const TOKEN = "http-threads-test";
let repo: TempRepo;
let worker: StartedWorker;
const logs = collectLogs();
/** MLP requests sent so far (every one must be counted once in the metrics and statistics). */
let sent = 0;

beforeAll(async () => {
  repo = makeRepo(["mlp"]);
  // Well above the MLP's run even on a busy test machine, so that its programs qualify for sure.
  worker = await startCpuWorker(
    repo,
    logs.logger,
    { repository: { dynamic: true, pollIntervalMs: 50 }, server: { httpThreads: 3, authToken: TOKEN } },
    { inlineMaxUs: 5000 },
  );
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  repo?.cleanup();
});

// Built once: every MLP request sends the same bytes.
const mlpInputs: Map<string, HostTensor> = readReference("mlp").get(1)?.inputs ?? new Map();
const jsonBody = f32JsonBody(mlpInputs);
const binaryBody = f32BinaryBody(mlpInputs);

/** One request on a connection of its own (keepalive off), so that any thread may take it. */
async function fresh(path: string, init: RequestInit = {}): Promise<{ status: number; bytes: Uint8Array }> {
  const res = await fetch(`${worker.url}${path}`, { ...init, keepalive: false });
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** A JSON infer request for `model`, on a fresh connection. */
const postJson = (model: string) => fresh(`/v2/models/${model}/infer`, { method: "POST", body: jsonBody });

async function inferJsonFresh(): Promise<{ status: number; bytes: Uint8Array }> {
  sent++;
  return postJson("mlp");
}

async function inferBinaryFresh(): Promise<{ status: number; bytes: Uint8Array }> {
  const { body, headerLength } = binaryBody;
  sent++;
  return fresh("/v2/models/mlp/infer", {
    method: "POST",
    body,
    headers: { "inference-header-content-length": String(headerLength) },
  });
}

/** `n` calls of `fn`, `width` at a time. */
async function many<T>(n: number, width: number, fn: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        next++;
        out.push(await fn());
      }
    }),
  );
  return out;
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const sameBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);

async function replicasReady(generation: number): Promise<void> {
  await waitFor(async () => {
    // Requests make the model due for inline runs; the replicas follow.
    await inferJsonFresh();
    const r = worker.fronts?.figures().replicas.mlp;
    return r && r.generation === generation && r.threads === 2 ? true : null;
  }, 60_000);
}

describe("several HTTP threads on one port", () => {
  let reference: { json: Uint8Array; binary: Uint8Array };

  test("every thread answers the MLP with the engine thread's bytes, JSON and binary", async () => {
    // Before any replica exists every answer comes from the main thread's engine.
    const json = await inferJsonFresh();
    const binary = await inferBinaryFresh();
    expect(json.status).toBe(200);
    expect(binary.status).toBe(200);
    reference = { json: json.bytes, binary: binary.bytes };
    await many(INLINE_AFTER_REQUESTS, 8, inferJsonFresh);
    await replicasReady(1);
    const before = worker.fronts?.figures().answered ?? [];
    const answers = [...(await many(150, 12, inferJsonFresh)), ...(await many(150, 12, inferBinaryFresh))];
    await Bun.sleep(300); // the threads report every 100 ms
    const after = worker.fronts?.figures().answered ?? [];
    for (const a of answers) expect(a.status).toBe(200);
    expect(answers.slice(0, 150).every((a) => sameBytes(a.bytes, reference.json))).toBe(true);
    expect(answers.slice(150).every((a) => sameBytes(a.bytes, reference.binary))).toBe(true);
    // 300 connections over three sockets: each extra thread took and answered some itself.
    expect(after.length).toBe(2);
    for (const [i, n] of after.entries()) expect(n - (before[i] ?? 0)).toBeGreaterThan(0);
  }, 120_000);

  test("metrics and statistics count every request once, whichever thread answered it", async () => {
    // The threads report every 100 ms: wait until the count has caught up, then check it exactly.
    const counted = async () => {
      const metrics = text((await fresh("/metrics")).bytes);
      const line = metrics
        .split("\n")
        .find((l) => l.startsWith('worker_requests_total{model="mlp",status="200",protocol="http"}'));
      return Number(line?.split(" ").at(-1));
    };
    await waitFor(async () => ((await counted()) >= sent ? true : null), 10_000);
    await Bun.sleep(250);
    expect(await counted()).toBe(sent);
    const stats = JSON.parse(text((await fresh("/v2/models/mlp/stats")).bytes)) as {
      model_stats: { inference_count: number; inference_stats: { success: { count: number } } }[];
    };
    expect(stats.model_stats[0]?.inference_count).toBe(sent);
    expect(stats.model_stats[0]?.inference_stats.success.count).toBe(sent);
  });

  test("the server metadata shows the extra threads and what they answered", async () => {
    const meta = JSON.parse(text((await fresh("/v2")).bytes)) as {
      xlaserve: { httpThreads: { threads: number; answered: number[]; replicas: Record<string, { threads: number }> } };
    };
    expect(meta.xlaserve.httpThreads.threads).toBe(2);
    expect(meta.xlaserve.httpThreads.answered.every((n) => n > 0)).toBe(true);
    expect(meta.xlaserve.httpThreads.replicas.mlp?.threads).toBe(2);
  });

  test("other routes and bad requests get the main thread's answers on every connection", async () => {
    const cases: Array<[string, RequestInit, number]> = [
      ["/v2", {}, 200],
      ["/v2/health/live", {}, 200],
      ["/v2/health/ready", {}, 200],
      ["/v2/models/mlp", {}, 200],
      ["/v2/models/mlp/ready", {}, 200],
      ["/v2/models/nope/infer", { method: "POST", body: jsonBody }, 404],
      ["/v2/models/mlp/versions/7/infer", { method: "POST", body: jsonBody }, 404],
      ["/v2/models/mlp/infer", { method: "POST", body: "{not json" }, 400],
      ["/v2/models/mlp/infer", { method: "POST", body: '{"inputs":[]}' }, 400],
      ["/v2/repository/index", { method: "POST", body: "{}" }, 200],
      ["/v2/repository/models/mlp/unload", { method: "POST" }, 401],
    ];
    for (const [path, init, status] of cases) {
      const answers = await many(24, 8, () => fresh(path, init));
      for (const a of answers) expect(a.status).toBe(status);
      const first = text(answers[0]?.bytes ?? new Uint8Array());
      if (status >= 400) expect(JSON.parse(first).error).toBeString();
      // Stable answers are the same bytes whichever thread took the connection.
      // (/v2 carries the threads' live request counts.)
      if (!path.includes("/health") && path !== "/v2/repository/index" && path !== "/v2") {
        for (const a of answers) expect(text(a.bytes)).toBe(first);
      }
    }
  }, 60_000);

  test("a reload reaches every thread with no failed request; the new version is replicated again", async () => {
    const old = reference.json;
    let stop = false;
    const failures: string[] = [];
    const clients = [0, 1, 2, 3].map(async () => {
      while (!stop) {
        const a = await inferJsonFresh();
        if (a.status !== 200) failures.push(`${a.status} ${text(a.bytes)}`);
      }
    });
    await Bun.sleep(100);
    scaleWeights(join(repo.repository, "mlp"), 5);
    // Every connection, whichever thread takes it, switches to the new version.
    await waitFor(async () => {
      const answers = await many(24, 8, inferJsonFresh);
      return answers.every((a) => a.status === 200 && !sameBytes(a.bytes, old)) ? true : null;
    }, 120_000);
    stop = true;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    await replicasReady(2);
    const now = await many(48, 8, inferJsonFresh);
    const first = now[0]?.bytes ?? new Uint8Array();
    expect(now.every((a) => a.status === 200 && sameBytes(a.bytes, first) && !sameBytes(a.bytes, old))).toBe(true);
  }, 180_000);

  test("a renamed bundle is served under its new name only, on every thread", async () => {
    const before = (await inferJsonFresh()).bytes;
    renameSync(join(repo.repository, "mlp"), join(repo.repository, "mlp2"));
    await waitFor(async () => ((await fresh("/v2/models/mlp2/ready")).status === 200 ? true : null), 60_000);
    const old = await many(30, 8, () => postJson("mlp"));
    for (const a of old) expect(a.status).toBe(404);
    const now = await many(30, 8, () => postJson("mlp2"));
    // The same model, answering under its new name (the name is part of the answer's text).
    const renamed = text(before).replace('"model_name":"mlp"', '"model_name":"mlp2"');
    for (const a of now) expect(text(a.bytes)).toBe(renamed);
    renameSync(join(repo.repository, "mlp2"), join(repo.repository, "mlp"));
    await waitFor(async () => ((await fresh("/v2/models/mlp/ready")).status === 200 ? true : null), 60_000);
  }, 120_000);

  test("an unload reaches every thread: 404 on every connection", async () => {
    const res = await fetch(`${worker.url}/v2/repository/models/mlp/unload`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    const answers = await many(30, 8, () => postJson("mlp"));
    for (const a of answers) {
      expect(a.status).toBe(404);
      expect(text(a.bytes)).toContain("mlp");
    }
  });

  test("stop closes the port on every thread", async () => {
    const url = worker.url;
    await worker.stop();
    const refused = await many(12, 4, async () => {
      try {
        await fetch(`${url}/v2/health/live`, { keepalive: false });
        return false;
      } catch {
        return true;
      }
    });
    expect(refused.every(Boolean)).toBe(true);
  });
});

describe("several HTTP threads before any model runs on them", () => {
  test("they relay every request, and the answers are the main thread's; an oversized body is refused alike", async () => {
    const other = makeRepo(["mlp"]);
    const w = await startCpuWorker(other, logs.logger, {
      repository: { dynamic: false },
      server: { httpThreads: 2, maxBodyBytes: 4096 },
    });
    try {
      // Fewer requests than make the MLP due for inline runs: no replica exists, all is relayed.
      const answers = await many(60, 8, async () => {
        const res = await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body: jsonBody, keepalive: false });
        return { status: res.status, text: await res.text() };
      });
      expect(answers.every((a) => a.status === 200 && a.text === answers[0]?.text)).toBe(true);
      await Bun.sleep(300);
      const f = w.fronts?.figures();
      expect(f?.answered).toEqual([0]);
      expect(f?.relayed[0]).toBeGreaterThan(0);
      // Refused on Content-Length, unread, with the main thread's answer whichever thread took the
      // connection: 413 for a model that exists, 404 for one that does not.
      const big = JSON.stringify({ inputs: [], padding: "x".repeat(8000) });
      const relayedBefore = w.fronts?.figures().relayed[0] ?? 0;
      for (const [model, status, error] of [
        ["mlp", 413, `request body of ${big.length} bytes exceeds the limit of 4096 bytes`],
        ["nonesuch", 404, 'unknown model "nonesuch"'],
      ] as const) {
        const refused = await many(30, 8, async () => {
          const res = await fetch(`${w.url}/v2/models/${model}/infer`, { method: "POST", body: big, keepalive: false });
          return { status: res.status, text: await res.text() };
        });
        for (const a of refused) {
          expect(a.status).toBe(status);
          expect(a.text).toBe(refused[0]?.text ?? "");
        }
        expect(JSON.parse(refused[0]?.text ?? "{}").error).toBe(error);
      }
      await Bun.sleep(300);
      // some came in on the other thread and were relayed without their bodies
      expect(w.fronts?.figures().relayed[0] ?? 0).toBeGreaterThan(relayedBefore);
    } finally {
      await w.stop();
      other.cleanup();
    }
  }, 120_000);
});

describe("several HTTP threads where no model could run on them", () => {
  for (const [why, overrides, config] of [
    ["the engine on the main thread", { engineThread: false }, {}],
    ["dynamic batching", {}, { concurrency: { dynamicBatching: true } }],
    ["inline runs off", { inlineMaxUs: 0 }, {}],
  ] as const) {
    test(`${why}: the worker serves on one thread and says why`, async () => {
      const other = makeRepo(["mlp"]);
      const before = logs.lines.length;
      const w = await startCpuWorker(
        other,
        logs.logger,
        { repository: { dynamic: false }, server: { httpThreads: 3 }, ...config },
        overrides,
      );
      try {
        expect(w.fronts).toBeNull();
        const said = logs.lines.slice(before).map((l) => String(l.msg));
        expect(said.some((m) => m.startsWith("server.httpThreads is 3, but the worker serves on one thread"))).toBe(
          true,
        );
        const res = await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body: jsonBody });
        expect(res.status).toBe(200);
      } finally {
        await w.stop();
        other.cleanup();
      }
    }, 120_000);
  }
});

describe("several HTTP threads and a port already in use", () => {
  test("the worker refuses to start instead of sharing the port with another server", async () => {
    const other = Bun.serve({ hostname: "127.0.0.1", port: 0, reusePort: true, fetch: () => new Response("other") });
    const r = makeRepo(["mlp"]);
    try {
      await expect(
        startCpuWorker(
          r,
          logs.logger,
          { repository: { dynamic: false }, server: { httpThreads: 2 } },
          { port: other.port as number },
        ),
      ).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+/);
      expect(await (await fetch(`http://127.0.0.1:${other.port}/`)).text()).toBe("other");
    } finally {
      other.stop(true);
      r.cleanup();
    }
  }, 120_000);
});

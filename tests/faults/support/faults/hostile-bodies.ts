import { runClients } from "../clients.ts";
import { type SuiteContext, freshRepo, sleep, started } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { spawnWorker } from "../worker-process.ts";

/** Hostile bodies: 100k-deep nesting, a NaN-filled invalid body, clients hanging up mid-body. */
export async function hostileBodies(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker(repo));
  const clients = runClients(() => w.url, ctx.body, ctx.expected, 2);
  const cases = 3 * ctx.scale;
  const port = Number(new URL(w.url).port);
  const statuses: number[] = [];
  let worstStall = 0;
  for (let i = 0; i < cases; i++) {
    const kind = i % 3;
    const t0 = Date.now();
    if (kind === 0) {
      const body = `{"inputs":[{"name":"features","shape":[1,64],"datatype":"FP32","data":${"[".repeat(100_000)}${"]".repeat(100_000)}}]}`;
      statuses.push((await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body })).status);
    } else if (kind === 1) {
      const body = `{"inputs":[{"name":"features","shape":[1,64],"datatype":"FP32","data":[${"NaN,".repeat(1_000_000)}x]}]}`;
      statuses.push((await fetch(`${w.url}/v2/models/mlp/infer`, { method: "POST", body })).status);
    } else {
      const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
      socket.write('POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"inputs":[');
      await sleep(50);
      socket.end();
    }
    worstStall = Math.max(worstStall, Date.now() - t0);
  }
  await sleep(100);
  const metrics = await (await fetch(`${w.url}/metrics`)).text();
  const tally = await clients.stop();
  const survived = w.alive() && tally.last === 0;
  await w.stop();
  const serverErrors = /worker_requests_total\{[^}]*status="5\d\d"/.test(metrics);
  return row(
    "hostile request bodies",
    cases,
    survived && !serverErrors && statuses.every((s) => s === 400),
    tally,
    worstStall,
    `statuses ${[...new Set(statuses)].join(",")}; ${serverErrors ? "5xx counted" : "no 5xx counted"}`,
  );
}

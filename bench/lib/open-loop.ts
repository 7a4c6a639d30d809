/**
 * An open loop of inference requests: one every 1/rate s on schedule, each latency timed from its
 * scheduled send (so a stalled server is not hidden by a stalled sender), used in this process or
 * in a child of its own (open-loop-child.ts) when another loop's sending must not delay this one's.
 */
import { percentile } from "./stats.ts";

export interface LoopPoint {
  readonly offered: number;
  readonly achieved: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failed: number;
}

/** One request's POST; resolves to the HTTP status once the answer is read. */
export type Send = () => Promise<number>;

export function inferSender(
  url: string,
  model: string,
  body: { readonly bytes: string | Uint8Array<ArrayBuffer>; readonly headers?: Record<string, string> },
): Send {
  const init = { method: "POST", body: body.bytes, headers: body.headers };
  return () =>
    fetch(`${url}/v2/models/${model}/infer`, init).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

export async function openLoop(send: Send, rate: number, ms: number): Promise<LoopPoint> {
  const latencies: number[] = [];
  let failed = 0;
  const t0 = performance.now();
  const total = Math.max(1, Math.floor((rate * ms) / 1000));
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const at = t0 + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    pending.push(
      send().then(
        (status) => {
          if (status === 200) latencies.push(performance.now() - at);
          else failed++;
        },
        () => {
          failed++;
        },
      ),
    );
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - t0) / 1000;
  return {
    offered: rate,
    achieved: Math.round(latencies.length / elapsed),
    p50Ms: round3(percentile(latencies, 50)),
    p99Ms: round3(percentile(latencies, 99)),
    failed,
  };
}

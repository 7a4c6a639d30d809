import { close } from "./answers.ts";

/** What the clients saw: every answer is one of the known versions' or counted wrong. */
export interface ClientTally {
  requests: number;
  ok: number;
  /** 200 answers whose logits match no version the bundle ever had. */
  wrong: number;
  /** Answers by status other than 200. */
  statuses: Record<string, number>;
  /** Requests that got no answer at all (connection refused or reset: the worker was down). */
  unanswered: number;
  /** The version index of the last 200 answer, and when (ms since the epoch) each was first seen. */
  last: number;
  firstSeen: Map<number, number>;
}

/**
 * `concurrency` clients posting the MLP request in a loop until stopped, each answer compared with
 * every version's expected logits.
 */
export function runClients(url: () => string, body: string, versions: readonly Float32Array[], concurrency = 4) {
  const tally: ClientTally = {
    requests: 0,
    ok: 0,
    wrong: 0,
    statuses: {},
    unanswered: 0,
    last: -1,
    firstSeen: new Map(),
  };
  let running = true;
  const loop = async () => {
    while (running) {
      tally.requests++;
      try {
        const res = await fetch(`${url()}/v2/models/mlp/infer`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json" },
        });
        const json = (await res.json()) as { outputs?: Array<{ data: number[] }> };
        if (res.status !== 200) {
          tally.statuses[res.status] = (tally.statuses[res.status] ?? 0) + 1;
          continue;
        }
        tally.ok++;
        const data = json.outputs?.[0]?.data ?? [];
        const version = versions.findIndex((v) => close(data, v));
        if (version < 0) tally.wrong++;
        else {
          tally.last = version;
          if (!tally.firstSeen.has(version)) tally.firstSeen.set(version, Date.now());
        }
      } catch {
        tally.unanswered++;
        await Bun.sleep(20);
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    tally,
    /** Waits until the answers are version `v` (all clients' latest), or throws. */
    async until(v: number, timeoutMs = 20_000): Promise<void> {
      const t0 = Date.now();
      const seenBefore = tally.requests;
      while (tally.last !== v || tally.requests < seenBefore + concurrency) {
        if (Date.now() - t0 > timeoutMs) throw new Error(`answers did not become version ${v} within ${timeoutMs} ms`);
        await Bun.sleep(10);
      }
    },
    async stop(): Promise<ClientTally> {
      running = false;
      await Promise.all(loops);
      return tally;
    },
  };
}

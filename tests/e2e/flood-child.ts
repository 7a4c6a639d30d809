/**
 * A closed-loop flood of one model's infer requests, in a process of its own: `clients` requests
 * always outstanding for `ms`, so the flooding model's queue stays as deep on a slow machine as on
 * a fast one, and sending it never delays the timing process's own requests and answers.
 *
 *   bun tests/e2e/flood-child.ts '{"url":…,"model":…,"bodyFile":…,"headers":{…},"clients":…,"ms":…}'
 * Prints {"ok":…,"refused":…,"failed":…} as one JSON line once done.
 */
import { readFileSync } from "node:fs";

interface Spec {
  readonly url: string;
  readonly model: string;
  readonly bodyFile: string;
  readonly headers?: Record<string, string>;
  readonly clients: number;
  readonly ms: number;
}

const spec = JSON.parse(process.argv[2] ?? "{}") as Spec;
const body = new Uint8Array(readFileSync(spec.bodyFile));
const target = `${spec.url}/v2/models/${spec.model}/infer`;
const end = performance.now() + spec.ms;
const counts = { ok: 0, refused: 0, failed: 0 };
await Promise.all(
  Array.from({ length: spec.clients }, async () => {
    while (performance.now() < end) {
      try {
        const res = await fetch(target, { method: "POST", body, headers: spec.headers });
        await res.arrayBuffer();
        if (res.status === 200) counts.ok++;
        else if (res.status === 429) counts.refused++;
        else counts.failed++;
      } catch {
        counts.failed++;
      }
    }
  }),
);
console.log(JSON.stringify(counts));

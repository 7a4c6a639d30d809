/**
 * open-loop.ts's loop in a process of its own: a flood of large requests sent from the process
 * that also times the light model's requests would delay those sends and answers on its own event
 * loop, and that delay would be counted as the worker's.
 *
 *   bun bench/lib/open-loop-child.ts '{"url":…,"model":…,"bodyFile":…,"headers":{…},"rate":…,"ms":…}'
 * Prints the LoopPoint as one JSON line.
 */
import { readFileSync } from "node:fs";
import { inferSender, openLoop } from "./open-loop.ts";

interface Spec {
  readonly url: string;
  readonly model: string;
  readonly bodyFile: string;
  readonly headers?: Record<string, string>;
  readonly rate: number;
  readonly ms: number;
}

const spec = JSON.parse(process.argv[2] ?? "{}") as Spec;
const bytes = new Uint8Array(readFileSync(spec.bodyFile));
const point = await openLoop(inferSender(spec.url, spec.model, { bytes, headers: spec.headers }), spec.rate, spec.ms);
console.log(JSON.stringify(point));

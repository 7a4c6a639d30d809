import { type Logger, createLogger } from "@xlaserve/core";
import { createServerApp } from "../../src/app.ts";
import { Metrics } from "../../src/metrics/metrics.ts";
import type { SharedMemoryRegistry } from "../../src/shared-memory/registry.ts";
import { startServer } from "../../src/start.ts";
import { TestRegistry } from "./test-registry.ts";

/** Parsed JSON bodies: tests probe them by shape with expect(), so they stay untyped. */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Json = any;

export interface Harness {
  readonly url: string;
  readonly registry: TestRegistry;
  readonly metrics: Metrics;
  readonly logs: Record<string, unknown>[];
  /** The logger whose lines land in `logs` (for a service started beside the app). */
  readonly logger: Logger;
  stop(): Promise<void>;
}

/** The real app on a real socket (127.0.0.1, port 0) over the test registry. */
export function startHarness(
  config: {
    maxBodyBytes?: number;
    authToken?: string;
    readiness?: "strict" | "lenient";
    /** The registry to serve (default: a new TestRegistry). */
    registry?: TestRegistry;
    sharedMemory?: SharedMemoryRegistry;
  } = {},
): Harness {
  const registry = config.registry ?? new TestRegistry();
  const metrics = new Metrics();
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "debug", sink: (line) => logs.push(JSON.parse(line)) });
  const app = createServerApp({
    registry,
    logger,
    metrics,
    sharedMemory: config.sharedMemory,
    config: {
      maxBodyBytes: config.maxBodyBytes ?? 1024 * 1024,
      authToken: config.authToken,
      readiness: config.readiness,
    },
  });
  const server = startServer(app, { host: "127.0.0.1", port: 0 });
  return { url: server.url, registry, metrics, logs, logger, stop: () => server.stop(true) };
}

/** POSTs a JSON value (or raw text) and returns status, headers and the parsed body. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? parseLenient(text) : undefined };
}

/** JSON.parse that turns the "NaN" / "Infinity" / "-Infinity" strings the server writes for non-finite floats into numbers. */
export function parseLenient(text: string): Json {
  return JSON.parse(text, (_k, v) =>
    v === "NaN"
      ? Number.NaN
      : v === "Infinity"
        ? Number.POSITIVE_INFINITY
        : v === "-Infinity"
          ? Number.NEGATIVE_INFINITY
          : v,
  );
}

/** Builds a binary-extension body: JSON header, then the tensors' bytes in order. */
export function binaryBody(header: unknown, parts: Uint8Array[]): { body: Uint8Array; headerLength: number } {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const total = json.byteLength + parts.reduce((n, p) => n + p.byteLength, 0);
  const body = new Uint8Array(total);
  body.set(json, 0);
  let at = json.byteLength;
  for (const p of parts) {
    body.set(p, at);
    at += p.byteLength;
  }
  return { body, headerLength: json.byteLength };
}

/** Splits a binary-extension response into its JSON header and binary section. */
export async function readBinaryResponse(response: Response): Promise<{ header: Json; binary: Uint8Array }> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const length = Number(response.headers.get("inference-header-content-length") ?? bytes.byteLength);
  return { header: JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))), binary: bytes.subarray(length) };
}

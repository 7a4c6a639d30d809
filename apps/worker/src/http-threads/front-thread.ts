/**
 * One of the worker's extra HTTP threads (see protocol.ts). It binds the worker's port with
 * SO_REUSEPORT and answers infer requests for the models it holds a replica of (replica-model.ts)
 * on its own copy of the CPU engine, with the server package's own infer service; every other request
 * (other routes, other models, a model being swapped) goes to the main thread as it came.
 */
import type { AbstractBackend, Logger } from "@xlaserve/core";
import { asXlaserveError, createLogger } from "@xlaserve/core";
import { InferService } from "@xlaserve/server";
import { INFER_PATH, INFER_VERSION_PATH } from "@xlaserve/server/infer/controller.ts";
import type { BunRequest, Server } from "bun";
import { createFromSpec } from "../engine/backend-spec.ts";
import type { FrontInit, FromFront, InferTarget, RequestTally, StatsDelta, ToFront } from "./protocol.ts";
import { ReplicaModel } from "./replica-model.ts";

declare const self: Worker;

/** How often answered requests and statistics go to the main thread. */
const TALLY_MS = 100;

let init: FrontInit | null = null;
let log: Logger = createLogger({ level: "warn" });
let engine: AbstractBackend | null = null;
let server: Server<undefined> | null = null;
const replicas = new Map<string, ReplicaModel>();
/** Dropped replicas whose last statistics have not been reported yet. */
const leaving: ReplicaModel[] = [];
const relays = new Map<number, (answer: Response) => void>();
let nextRelay = 1;
const tallies = new Map<string, RequestTally>();
let answered = 0;
let relayed = 0;
let tallyTimer: ReturnType<typeof setInterval> | null = null;

function send(message: FromFront, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

/** worker_requests_total / worker_request_latency_seconds, gathered here and applied on the main thread. */
const counter = {
  requestDone(model: string, status: string, seconds: number, _protocol?: string, error?: string): void {
    const key = `${model}\u0000${status}`;
    let t = tallies.get(key);
    if (!t) {
      t = { model, status, seconds: [] };
      tallies.set(key, t);
    }
    t.seconds.push(seconds);
    if (error !== undefined) t.error = error;
    answered++;
  },
};

function flushTally(): void {
  const stats: StatsDelta[] = [];
  for (const r of [...replicas.values(), ...leaving]) {
    const delta = r.takeDelta();
    if (delta) stats.push({ name: r.name, generation: r.generation, stats: delta });
  }
  // A dropped replica still pinned by a request records that request when it ends: it stays on
  // the list until it is freed, so its last statistics are taken too.
  const pinned = leaving.filter((r) => r.ready());
  leaving.splice(0, leaving.length, ...pinned);
  if (tallies.size === 0 && stats.length === 0 && relayed === 0) return;
  send({ type: "tally", requests: [...tallies.values()], stats, answered, relayed });
  tallies.clear();
  answered = 0;
  relayed = 0;
}

/** The request as it came, answered by the main thread. */
async function relay(request: Request, infer: InferTarget | null = null) {
  // An infer body declared over the limit is never read here: the request goes on with its
  // headers alone, and the main thread, which refuses on Content-Length before reading a body,
  // answers it as it answers its own (404 for an unknown model, 503 for one not ready, else 413).
  const declared = Number(request.headers.get("content-length") ?? 0);
  const unread = infer !== null && init !== null && declared > init.maxBodyBytes;
  const body = unread || request.method === "GET" || request.method === "HEAD" ? null : await request.arrayBuffer();
  const id = nextRelay++;
  relayed++;
  const answer = new Promise<Response>((resolve) => relays.set(id, resolve));
  // A client that goes away stops its request on the main thread too (a queued run is dropped).
  request.signal.addEventListener("abort", () => {
    if (relays.has(id)) send({ type: "relay-aborted", id });
  });
  const headers = [...request.headers];
  send({ type: "relay", id, method: request.method, url: request.url, headers, body, infer }, body ? [body] : []);
  return answer;
}

function infer(service: InferService, request: BunRequest, name: string, version: string | undefined) {
  const replica = replicas.get(name);
  if (!replica || (version !== undefined && version !== "" && version !== replica.version)) {
    return relay(request, { model: name, version });
  }
  replica.pin();
  return service.handle(request, name, version, replica).finally(() => replica.unpin());
}

async function start(message: FrontInit): Promise<void> {
  init = message;
  log = createLogger({
    level: message.logLevel,
    format: "json",
    sink: (line) => send({ type: "log", line }),
  }).child({ component: "http-thread", thread: message.index });
  engine = await createFromSpec(message.backend);
  const service = new InferService({
    registry: { getModel: () => undefined },
    metrics: counter,
    logger: log,
    maxBodyBytes: message.maxBodyBytes,
  });
  server = Bun.serve({
    hostname: message.host,
    port: message.port,
    reusePort: true,
    maxRequestBodySize: message.maxRequestBodySize,
    routes: {
      [INFER_PATH]: {
        POST: (request: BunRequest<typeof INFER_PATH>) => infer(service, request, request.params.model, undefined),
      },
      [INFER_VERSION_PATH]: {
        POST: (request: BunRequest<typeof INFER_VERSION_PATH>) =>
          infer(service, request, request.params.model, request.params.version),
      },
    },
    fetch: (request) => relay(request),
  });
  tallyTimer = setInterval(flushTally, TALLY_MS);
}

async function addReplica(message: Extract<ToFront, { type: "replica" }>): Promise<void> {
  const { spec } = message;
  if (!engine) {
    send({ type: "replica-refused", name: spec.name, generation: spec.generation, reason: "no engine on this thread" });
    return;
  }
  try {
    const replica = await ReplicaModel.create(engine, spec);
    const old = replicas.get(spec.name);
    if (old && old.generation > spec.generation) {
      replica.drop();
      return;
    }
    replicas.set(spec.name, replica);
    if (old) retire(old);
    send({ type: "replica-ready", name: spec.name, generation: spec.generation });
  } catch (err) {
    const reason = asXlaserveError(err).message;
    log.warn("replica refused: its requests go to the main thread", { model: spec.name, reason });
    send({ type: "replica-refused", name: spec.name, generation: spec.generation, reason });
  }
}

function retire(replica: ReplicaModel): void {
  replica.drop();
  leaving.push(replica);
}

async function stop(): Promise<void> {
  // Stops accepting; the requests in flight finish (a relayed one still gets its answer).
  await server?.stop(false);
  if (tallyTimer) clearInterval(tallyTimer);
  for (const r of replicas.values()) retire(r);
  replicas.clear();
  flushTally();
  await engine?.dispose();
  send({ type: "stopped" });
}

// Messages are handled in order: a drop that follows a replica applies after it.
let queue: Promise<void> = Promise.resolve();
self.onmessage = (event: MessageEvent<ToFront>) => {
  const message = event.data;
  if (message.type === "relayed") {
    // Answers do not wait behind a replica being built.
    const resolve = relays.get(message.id);
    relays.delete(message.id);
    resolve?.(new Response(message.body, { status: message.status, headers: message.headers }));
    return;
  }
  queue = queue.then(async () => {
    try {
      switch (message.type) {
        case "init":
          await start(message);
          send({ type: "ready" });
          return;
        case "replica":
          await addReplica(message);
          return;
        case "drop": {
          const r = replicas.get(message.name);
          if (r && r.generation <= message.generation) {
            replicas.delete(message.name);
            retire(r);
          }
          return;
        }
        case "sync":
          send({ type: "synced", id: message.id });
          return;
        case "stop":
          await stop();
          return;
      }
    } catch (err) {
      const error = asXlaserveError(err).message;
      if (message.type === "init") send({ type: "failed", error: `${error} (${init?.host}:${init?.port})` });
      else log.error("HTTP thread message failed", { type: message.type, error });
    }
  });
};

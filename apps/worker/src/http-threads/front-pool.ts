import type { Logger } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";
import type { RequestCounter } from "@xlaserve/server";
import type { ModelStats } from "@xlaserve/server/contract.ts";
import { errorResponse } from "@xlaserve/server/http-error.ts";
import type { FrontInit, FromFront, InferTarget, ReplicaSpec, ToFront } from "./protocol.ts";

export interface FrontPoolOptions
  extends Pick<FrontInit, "host" | "port" | "maxBodyBytes" | "maxRequestBodySize" | "backend"> {
  /** Extra HTTP threads to start (the main thread is the first one). */
  readonly threads: number;
  /**
   * Answers a relayed request: `infer` is set for the infer routes (answered by the infer service
   * directly, as the main thread's own route table does), else the server app handles it.
   */
  readonly handle: (request: Request, infer: InferTarget | null) => Promise<Response>;
  readonly metrics: RequestCounter;
  /** Adds a replica's statistics into its model's (matched by name and generation). */
  readonly addStats: (name: string, generation: number, stats: ModelStats) => void;
  readonly logger: Logger;
  /** How long a thread may take to bind and start (default 30 s). */
  readonly startTimeoutMs?: number;
}

interface Front {
  readonly worker: Worker;
  /** Resolves when the thread reported "stopped" (or died). */
  readonly stopped: Promise<void>;
  /** Set when the thread died: nothing is sent to it any more. */
  dead: boolean;
}

/** Per-thread counts since start, for the server metadata's "xlaserve" field (GET /v2) and the tests. */
export interface FrontFigures {
  readonly threads: number;
  readonly answered: number[];
  readonly relayed: number[];
  readonly replicas: Record<string, { generation: number; threads: number; refused: string[] }>;
}

/**
 * The main thread's side of the extra HTTP threads (front-thread.ts): starts them on the bound
 * port, answers what they relay, applies their request tallies and statistics, hands them
 * replicas of inline models and drops those on a swap or unload, and stops them on shutdown.
 */
export class FrontPool {
  private readonly fronts: Front[] = [];
  private readonly answered: number[];
  private readonly relayed: number[];
  private readonly replicaState = new Map<string, { generation: number; ready: Set<number>; refused: string[] }>();
  private stopping: Promise<void> | null = null;
  /** Relayed requests being answered, by thread and id (aborted when their client goes away). */
  private readonly answering = new Map<string, AbortController>();
  /** Syncs in flight: the live threads that have not answered each yet. */
  private readonly syncs = new Map<number, { waiting: Set<Front>; resolve: () => void }>();
  private nextSync = 1;

  private constructor(private readonly options: FrontPoolOptions) {
    this.answered = new Array(options.threads).fill(0);
    this.relayed = new Array(options.threads).fill(0);
  }

  /** Starts every thread and waits until each listens; any failure stops them all and throws. */
  static async start(options: FrontPoolOptions): Promise<FrontPool> {
    const pool = new FrontPool(options);
    try {
      await Promise.all(Array.from({ length: options.threads }, (_, i) => pool.startOne(i + 1)));
    } catch (err) {
      await pool.stop();
      throw err;
    }
    return pool;
  }

  private startOne(index: number): Promise<void> {
    const worker = new Worker(new URL("./front-thread.ts", import.meta.url).href);
    let markStopped = () => {};
    const stopped = new Promise<void>((resolve) => {
      markStopped = resolve;
    });
    const front: Front = { worker, stopped, dead: false };
    this.fronts.push(front);
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new XlaserveError("INTERNAL", `HTTP thread ${index} did not start`)),
        this.options.startTimeoutMs ?? 30_000,
      );
      worker.onmessage = (event: MessageEvent<FromFront>) => {
        const m = event.data;
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (m.type === "failed") {
          clearTimeout(timer);
          reject(new XlaserveError("INTERNAL", `HTTP thread ${index} could not start: ${m.error}`));
        } else if (m.type === "stopped") {
          markStopped();
        } else {
          this.onMessage(index, m);
        }
      };
      worker.onerror = (event) => {
        clearTimeout(timer);
        front.dead = true;
        markStopped();
        // Its socket went with it: the kernel sends new connections to the other threads.
        this.options.logger.error("HTTP thread failed; the others go on", { thread: index, error: event.message });
        // It will not answer its syncs; they wait for the other threads only.
        for (const id of [...this.syncs.keys()]) this.synced(id, front);
        reject(new XlaserveError("INTERNAL", `HTTP thread ${index} failed: ${event.message}`));
      };
    });
    const { options } = this;
    const init: FrontInit = {
      type: "init",
      index,
      host: options.host,
      port: options.port,
      maxBodyBytes: options.maxBodyBytes,
      maxRequestBodySize: options.maxRequestBodySize,
      logLevel: options.logger.level,
      backend: options.backend,
    };
    worker.postMessage(init);
    return ready;
  }

  private onMessage(index: number, m: FromFront): void {
    switch (m.type) {
      case "relay":
        void this.answerRelay(index, m);
        return;
      case "relay-aborted":
        this.answering.get(`${index}:${m.id}`)?.abort();
        return;
      case "synced":
        this.synced(m.id, this.fronts[index - 1]);
        return;
      case "tally":
        for (const t of m.requests) {
          // The message goes with the last of them: what the status page shows is the latest.
          const last = t.seconds.length - 1;
          for (const [i, s] of t.seconds.entries()) {
            this.options.metrics.requestDone(t.model, t.status, s, "http", i === last ? t.error : undefined);
          }
        }
        for (const d of m.stats) this.options.addStats(d.name, d.generation, d.stats);
        this.answered[index - 1] = (this.answered[index - 1] ?? 0) + m.answered;
        this.relayed[index - 1] = (this.relayed[index - 1] ?? 0) + m.relayed;
        return;
      case "log": {
        const { time: _time, level, msg, ...fields } = JSON.parse(m.line) as Record<string, unknown>;
        const at = level === "debug" || level === "info" || level === "warn" ? level : "error";
        this.options.logger[at](String(msg), fields);
        return;
      }
      case "replica-ready":
      case "replica-refused": {
        const state = this.replicaState.get(m.name);
        if (!state || state.generation !== m.generation) return;
        if (m.type === "replica-ready") state.ready.add(index);
        else state.refused.push(`thread ${index}: ${m.reason}`);
        return;
      }
    }
  }

  private async answerRelay(index: number, m: Extract<FromFront, { type: "relay" }>): Promise<void> {
    const front = this.fronts[index - 1];
    const key = `${index}:${m.id}`;
    const abort = new AbortController();
    this.answering.set(key, abort);
    let response: Response;
    let body: ArrayBuffer;
    try {
      response = await this.options.handle(
        new Request(m.url, { method: m.method, headers: m.headers, body: m.body ?? undefined, signal: abort.signal }),
        m.infer,
      );
      body = await response.arrayBuffer();
    } catch (err) {
      response = errorResponse(500, `relayed request failed: ${(err as Error)?.message ?? err}`);
      body = await response.arrayBuffer();
    } finally {
      this.answering.delete(key);
    }
    const answer: ToFront = {
      type: "relayed",
      id: m.id,
      status: response.status,
      headers: [...response.headers],
      body,
    };
    // Every relayed request gets an answer, or the thread's client would wait forever.
    if (front && !front.dead) front.worker.postMessage(answer, [answer.body]);
  }

  /** Hands every thread a replica of a model that runs inline (a newer generation replaces the older). */
  publish(spec: ReplicaSpec): void {
    if (this.stopping) return;
    this.replicaState.set(spec.name, { generation: spec.generation, ready: new Set(), refused: [] });
    this.post({ type: "replica", spec });
  }

  /** The model's version `generation` is retired: its requests go to the main thread from now on. */
  drop(name: string, generation: number): void {
    const state = this.replicaState.get(name);
    if (state && state.generation <= generation) this.replicaState.delete(name);
    this.post({ type: "drop", name, generation });
  }

  /** Resolves once every live thread has handled everything sent to it before this call. */
  sync(): Promise<void> {
    const live = this.fronts.filter((f) => !f.dead);
    if (live.length === 0 || this.stopping) return Promise.resolve();
    const id = this.nextSync++;
    return new Promise<void>((resolve) => {
      this.syncs.set(id, { waiting: new Set(live), resolve });
      this.post({ type: "sync", id });
    });
  }

  /** `front` has handled sync `id` (or died): the sync resolves once no live thread owes it. */
  private synced(id: number, front: Front | undefined): void {
    const s = this.syncs.get(id);
    if (!s || !front) return;
    s.waiting.delete(front);
    if (s.waiting.size > 0) return;
    this.syncs.delete(id);
    s.resolve();
  }

  private post(message: ToFront): void {
    for (const f of this.fronts) if (!f.dead) f.worker.postMessage(message);
  }

  figures(): FrontFigures {
    const replicas: FrontFigures["replicas"] = {};
    for (const [name, s] of this.replicaState) {
      replicas[name] = { generation: s.generation, threads: s.ready.size, refused: [...s.refused] };
    }
    return {
      threads: this.fronts.filter((f) => !f.dead).length,
      answered: [...this.answered],
      relayed: [...this.relayed],
      replicas,
    };
  }

  /** Stops accepting on every thread, lets their requests finish, takes their last tallies. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.post({ type: "stop" });
      // A thread that does not answer within 10 s is terminated anyway.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 10_000);
      });
      await Promise.race([Promise.all(this.fronts.map((f) => f.stopped)), late]);
      clearTimeout(timer);
      for (const f of this.fronts) f.worker.terminate();
      for (const [id, s] of this.syncs) {
        this.syncs.delete(id);
        s.resolve();
      }
    })();
    return this.stopping;
  }
}

import type { HostTensor, LogLevel } from "@xlaserve/core";
import type { ModelStats, ServedModel } from "@xlaserve/server/contract.ts";
import type { BackendSpec } from "../engine/backend-spec.ts";

/**
 * Messages between the main thread and the worker's extra HTTP threads (front-thread.ts). Each
 * extra thread binds the same port (SO_REUSEPORT); the kernel spreads connections over all of
 * them. A thread answers infer requests for the models it holds a replica of itself and relays
 * every other request to the main thread, which answers it with the full app.
 */

/** A model small enough to run inline, as an HTTP thread rebuilds it (replica-model.ts). */
export interface ReplicaSpec
  extends Pick<ServedModel, "name" | "version" | "platform" | "inputs" | "outputs" | "compiledBatchSizes"> {
  /** The main thread's load generation: a replica answers for that version only. */
  readonly generation: number;
  /** A thread refuses the replica when its copy's median run (after a warm-up) is longer. */
  readonly maxRunUs: number;
  /** Every program once, with the compiled batch sizes it serves and the engine thread's answer for zero inputs. */
  readonly programs: readonly ReplicaProgram[];
  readonly weights: readonly HostTensor[];
}

export interface ReplicaProgram {
  readonly batchSizes: readonly number[];
  /** The engine's serialized program. */
  readonly bytes: Uint8Array;
  /** Zeros at the largest of its batch sizes, and the engine thread's answer for them. */
  readonly referenceInputs: readonly HostTensor[];
  readonly referenceOutputs: readonly HostTensor[];
}

/** An infer route's model and version, as the main thread's own route table passes them on. */
export interface InferTarget {
  readonly model: string;
  readonly version: string | undefined;
}

export interface FrontInit {
  readonly type: "init";
  /** 1-based thread number, for logs and metrics (the main thread is 0). */
  readonly index: number;
  readonly host: string;
  /** The port the main thread bound with SO_REUSEPORT. */
  readonly port: number;
  readonly maxBodyBytes: number;
  readonly maxRequestBodySize: number;
  readonly logLevel: LogLevel;
  /** The CPU engine to host replicas on (created on the thread from this spec). */
  readonly backend: BackendSpec;
}

export type ToFront =
  | FrontInit
  | { readonly type: "replica"; readonly spec: ReplicaSpec }
  | { readonly type: "drop"; readonly name: string; readonly generation: number }
  /** Answered with "synced" once every message before it is handled. */
  | { readonly type: "sync"; readonly id: number }
  | {
      readonly type: "relayed";
      readonly id: number;
      readonly status: number;
      readonly headers: [string, string][];
      readonly body: ArrayBuffer;
    }
  | { readonly type: "stop" };

/** Requests answered on an HTTP thread, for the main thread's worker_requests_total and latency histogram. */
export interface RequestTally {
  readonly model: string;
  readonly status: string;
  readonly seconds: number[];
  /** The message of the last of these that failed, if any did. */
  error?: string;
}

/** A replica's statistics since its last report, added into the model's own on the main thread. */
export interface StatsDelta {
  readonly name: string;
  readonly generation: number;
  readonly stats: ModelStats;
}

export type FromFront =
  | { readonly type: "ready" }
  | { readonly type: "synced"; readonly id: number }
  /** The client of relayed request `id` went away: the main thread aborts its handling. */
  | { readonly type: "relay-aborted"; readonly id: number }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "replica-ready"; readonly name: string; readonly generation: number }
  | { readonly type: "replica-refused"; readonly name: string; readonly generation: number; readonly reason: string }
  | {
      readonly type: "relay";
      readonly id: number;
      readonly method: string;
      readonly url: string;
      readonly headers: [string, string][];
      readonly body: ArrayBuffer | null;
      /** Set for the infer routes: the main thread answers those with its infer service directly. */
      readonly infer: InferTarget | null;
    }
  | {
      readonly type: "tally";
      readonly requests: RequestTally[];
      readonly stats: StatsDelta[];
      /** Requests this thread answered itself, and relayed, since its last report. */
      readonly answered: number;
      readonly relayed: number;
    }
  | { readonly type: "stopped" }
  /** A log line of the thread's, as JSON, for the main thread's logger (one sink for the whole worker). */
  | { readonly type: "log"; readonly line: string };

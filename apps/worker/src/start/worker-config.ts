import type { AbstractBackend, Logger } from "@xlaserve/core";
import { loadConfig, validateConfig } from "@xlaserve/core/config/load.ts";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { ProgramSource } from "../model/program-types.ts";
import { kserveConventions } from "./kserve-conventions.ts";

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

export interface WorkerOverrides {
  /** Merged over the loaded configuration (file, then XLASERVE_* env, then these). */
  readonly config?: DeepPartial<Config>;
  /** A YAML or JSON configuration file. */
  readonly configFile?: string;
  /** Environment for XLASERVE_* settings; defaults to process.env. Pass {} in tests. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Shortcuts for config.repository.path / server.port / server.host / server.grpcPort. */
  readonly repository?: string;
  /** 0 picks a free port, and then the gRPC service takes a free one too unless grpcPort is given. */
  readonly port?: number;
  readonly grpcPort?: number;
  readonly host?: string;
  /** Use this backend instead of selecting one (tests). The worker disposes it on stop. */
  readonly backend?: AbstractBackend;
  /** Use this instead of the program cache (tests). */
  readonly programs?: ProgramSource;
  readonly logger?: Logger;
  /** Shortcut for config.placement.engineThread: the backend on its own thread (default true). */
  readonly engineThread?: boolean;
  /** Shortcut for config.placement.inlineMaxUs (XLASERVE_INLINE_MAX_US; 0 turns inline runs off). */
  readonly inlineMaxUs?: number;
  /** Install SIGTERM/SIGINT handlers that stop the worker (the CLI does). */
  readonly handleSignals?: boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const cur = out[k];
    out[k] = isObject(cur) && isObject(v) ? merge(cur, v) : v;
  }
  return out;
}

/** Configuration: defaults < platform conventions (KServe) < file < XLASERVE_* env < overrides (the config, then the shortcuts). */
export function resolveWorkerConfig(overrides: WorkerOverrides = {}): Config {
  const env = overrides.env ?? process.env;
  const conventions = kserveConventions(env);
  const loaded = loadConfig({ file: overrides.configFile, env, ...(conventions ? { base: conventions } : {}) });
  const shortcuts: Record<string, unknown> = {};
  if (overrides.repository !== undefined) shortcuts.repository = { path: overrides.repository };
  if (overrides.port !== undefined || overrides.host !== undefined || overrides.grpcPort !== undefined) {
    shortcuts.server = { port: overrides.port, host: overrides.host, grpcPort: overrides.grpcPort };
  }
  if (overrides.engineThread !== undefined || overrides.inlineMaxUs !== undefined) {
    shortcuts.placement = { engineThread: overrides.engineThread, inlineMaxUs: overrides.inlineMaxUs };
  }
  const merged = merge(
    merge(loaded as unknown as Record<string, unknown>, (overrides.config ?? {}) as Record<string, unknown>),
    shortcuts,
  );
  return validateConfig(merged);
}

/**
 * Requests admitted at once per model when the configuration leaves it unset. An engine that
 * computes serially (the CPU engine's thread runs one program at a time) only queues admitted
 * requests in its message queue, where they travel together (one message and one thread wake-up
 * for several); measured with wrk and 16 connections on the MLP, 16 instead of 4 took the HTTP
 * thread from about 60 to 40-50 us per request. On PJRT each admitted execution can hold its own
 * device scratch, which the budget counts once per model: 4 keeps that overlap small.
 */
export function perModelDefault(backend: AbstractBackend): number {
  return backend.serialCompute ? 16 : 4;
}

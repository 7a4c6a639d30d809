import { type ErrorCode, XlaserveError, asXlaserveError } from "../errors.ts";
import type { EngineName } from "../config/schema.ts";
import type { PluginCandidate } from "./discover.ts";

/**
 * engine = auto | pjrt | reactant -> the engine to run and why. Core cannot open a plugin (no
 * FFI here), so the caller supplies `probe`, which loads a plugin and checks its PJRT API version
 * and table layout against the bindings (ARCHITECTURE rule 1). auto never fails: any problem
 * becomes the reason for running the CPU engine. pjrt fails with the plugin's own error.
 */

export type ProbeResult =
  | { readonly ok: true; readonly facts: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

export type PluginProbe = (path: string) => ProbeResult | Promise<ProbeResult>;

export interface SelectEngineInput {
  readonly engine: EngineName;
  readonly candidates: readonly PluginCandidate[];
  readonly probe: PluginProbe;
  /** Places discovery looked at, quoted in the reason when nothing was found. */
  readonly searched?: readonly string[];
}

export interface EngineChoice {
  readonly engine: "pjrt" | "reactant";
  readonly reason: string;
  readonly plugin?: { readonly path: string; readonly facts: Readonly<Record<string, unknown>> };
}

interface Failure {
  readonly candidate: PluginCandidate;
  readonly code: ErrorCode;
  readonly message: string;
}

export async function selectEngine(input: SelectEngineInput): Promise<EngineChoice> {
  if (input.engine === "reactant") {
    return { engine: "reactant", reason: "engine=reactant in the configuration" };
  }
  const failures: Failure[] = [];
  for (const candidate of input.candidates) {
    const result = await probeCandidate(candidate, input.probe);
    if (result.ok) {
      return {
        engine: "pjrt",
        reason: `engine=${input.engine}: PJRT plugin ${candidate.path} (from ${describeSource(candidate)}) loaded and matches the bindings`,
        plugin: { path: candidate.path, facts: result.facts },
      };
    }
    failures.push({ candidate, code: result.code, message: result.message });
  }
  const why = failures.length === 0 ? notFound(input.searched ?? []) : failures.map(describeFailure).join("; ");
  if (input.engine === "auto") {
    return { engine: "reactant", reason: `engine=auto fell back to the CPU engine: ${why}` };
  }
  const first = failures[0];
  throw new XlaserveError(first ? first.code : "PLUGIN_NOT_FOUND", `engine=pjrt but ${why}`, {
    plugins: failures.map((f) => ({ path: f.candidate.path, code: f.code, message: f.message })),
    searched: input.searched ?? [],
  });
}

async function probeCandidate(candidate: PluginCandidate, probe: PluginProbe): Promise<ProbeResult> {
  if (!candidate.exists) {
    return { ok: false, code: "PLUGIN_NOT_FOUND", message: "the file does not exist" };
  }
  try {
    return await probe(candidate.path);
  } catch (cause) {
    // A probe that throws is a broken plugin, not a reason for auto to fail.
    const error = asXlaserveError(cause, "PLUGIN_NOT_FOUND");
    return { ok: false, code: error.code, message: error.message };
  }
}

function describeSource(candidate: PluginCandidate): string {
  switch (candidate.source) {
    case "config":
      return "config pjrt.plugin";
    case "env":
      return "env XLASERVE_PJRT_PLUGIN";
    case "python":
      return `python packages in ${candidate.origin}`;
  }
}

function describeFailure(failure: Failure): string {
  return `plugin ${failure.candidate.path} (from ${describeSource(failure.candidate)}): ${failure.code} ${failure.message}`;
}

function notFound(searched: readonly string[]): string {
  return searched.length === 0
    ? "no PJRT plugin found (no places to look in)"
    : `no PJRT plugin found (looked in ${searched.join(", ")})`;
}

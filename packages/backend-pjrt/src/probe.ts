import { join } from "node:path";
import { asXlaserveError, type ErrorCode } from "@xlaserve/core";
import { PjrtApi } from "./api/pjrt-api.ts";
import { errorFromJson, lastJsonLine, runChild, tail } from "./isolated/child-process.ts";
import { initializePlugin, pluginAttributes } from "./runtime/plugin.ts";

export interface PjrtProbeFacts {
  /** "major.minor" the plugin reports. */
  readonly apiVersion: string;
  /** PJRT_Api.struct_size. */
  readonly structSize: number;
  /** Which verified layout admitted it. */
  readonly verifiedOn: string;
  readonly xlaVersion: string;
  readonly stablehloCurrentVersion: string;
  readonly stablehloMinimumVersion: string;
}

export type PjrtProbeResult =
  | { readonly ok: true; readonly facts: PjrtProbeFacts }
  | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

/**
 * Loads and gates a plugin in this process, then initializes it and reads its attributes
 * (no client: no device memory is taken). Never throws.
 */
export function probeInProcess(path: string): PjrtProbeResult {
  try {
    const api = PjrtApi.open(path);
    initializePlugin(api);
    const attrs = pluginAttributes(api);
    return {
      ok: true,
      facts: {
        apiVersion: api.version,
        structSize: api.plugin.facts.structSize,
        verifiedOn: api.verified.verifiedOn,
        xlaVersion: attrs.xlaVersion,
        stablehloCurrentVersion: attrs.stablehloCurrentVersion,
        stablehloMinimumVersion: attrs.stablehloMinimumVersion,
      },
    };
  } catch (error) {
    const typed = asXlaserveError(error, "PLUGIN_NOT_FOUND");
    return { ok: false, code: typed.code, message: typed.message };
  }
}

/**
 * The engine selector's probe: can this plugin be used, and what is it? By default it runs in a
 * child process, so a plugin that crashes or aborts while loading cannot take the caller down
 * (the answer is then PLUGIN_NOT_FOUND with the child's stderr). Never throws.
 */
export async function probePjrtPlugin(
  path: string,
  options: { isolate?: boolean; timeoutMs?: number } = {},
): Promise<PjrtProbeResult> {
  if (options.isolate === false) return probeInProcess(path);
  try {
    const result = await runChild(join(import.meta.dir, "probe-child.ts"), [path], options.timeoutMs ?? 60_000);
    const answer = lastJsonLine(result.stdout);
    if (answer && typeof answer === "object" && "ok" in answer) return answer as PjrtProbeResult;
    const typed = errorFromJson(answer);
    if (typed) return { ok: false, code: typed.code, message: typed.message };
    const how = result.timedOut
      ? "timed out"
      : result.signal
        ? `died of ${result.signal}`
        : `exited with code ${result.exitCode}`;
    return {
      ok: false,
      code: "PLUGIN_NOT_FOUND",
      message: `probing the PJRT plugin ${path}: the probe process ${how}: ${tail(result.stderr, 1000)}`,
    };
  } catch (error) {
    const typed = asXlaserveError(error, "PLUGIN_NOT_FOUND");
    return { ok: false, code: typed.code, message: typed.message };
  }
}

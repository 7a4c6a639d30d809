import { CStruct } from "../abi/cstruct.ts";
import { PJRT_Plugin_Attributes_Args, PJRT_Plugin_Initialize_Args } from "../abi/structs.ts";
import type { PjrtApi } from "../api/pjrt-api.ts";
import { type NamedValue, readNamedValues } from "./named-values.ts";

export interface PluginAttributes {
  /** The XLA build of the plugin (a commit hash or version); part of the cache identity. */
  readonly xlaVersion: string;
  readonly stablehloCurrentVersion: string;
  readonly stablehloMinimumVersion: string;
  readonly raw: Readonly<Record<string, NamedValue>>;
}

const initialized = new WeakSet<PjrtApi>();

/** PJRT_Plugin_Initialize, once per loaded table (the API asks for exactly one call). */
export function initializePlugin(api: PjrtApi): void {
  if (initialized.has(api)) return;
  api.call("PJRT_Plugin_Initialize", new CStruct(PJRT_Plugin_Initialize_Args));
  initialized.add(api);
}

function versionText(value: NamedValue | undefined): string {
  if (value === undefined) return "unknown";
  return Array.isArray(value) ? value.join(".") : String(value);
}

/** PJRT_Plugin_Attributes: xla_version and the StableHLO versions the plugin reads. */
export function pluginAttributes(api: PjrtApi): PluginAttributes {
  const args = new CStruct(PJRT_Plugin_Attributes_Args);
  api.call("PJRT_Plugin_Attributes", args);
  const raw = readNamedValues(args.get("attributes"), args.get("num_attributes"));
  return {
    xlaVersion: versionText(raw.xla_version),
    stablehloCurrentVersion: versionText(raw.stablehlo_current_version),
    stablehloMinimumVersion: versionText(raw.stablehlo_minimum_version),
    raw,
  };
}

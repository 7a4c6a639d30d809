import { existsSync } from "node:fs";
import { type Library, type Pointer, dlopen, read } from "bun:ffi";
import { XlaserveError } from "@xlaserve/core";
import { LAYOUT_0_113 } from "../abi/slots.ts";
import { PJRT_Api_Version } from "../abi/structs.ts";
import type { TableFacts } from "./gate.ts";

const SYMBOLS = { GetPjrtApi: { args: [], returns: "ptr" } } as const;

export interface LoadedPlugin {
  readonly path: string;
  readonly library: Library<typeof SYMBOLS>;
  /** Address of the plugin's PJRT_Api. */
  readonly api: number;
  readonly facts: TableFacts;
}

/**
 * Opens a plugin and reads only the table's header (struct_size and the embedded version), the
 * part every PJRT version lays out the same way. No slot is read here; the gate decides that.
 */
export function loadPlugin(path: string): LoadedPlugin {
  if (!existsSync(path)) {
    throw new XlaserveError("PLUGIN_NOT_FOUND", `no PJRT plugin at ${path}`, { plugin: path });
  }
  let library: Library<typeof SYMBOLS>;
  try {
    library = dlopen(path, SYMBOLS);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new XlaserveError(
      "PLUGIN_NOT_FOUND",
      `cannot open ${path} as a PJRT plugin (GetPjrtApi): ${why}`,
      { plugin: path },
      { cause },
    );
  }
  const api = Number(library.symbols.GetPjrtApi() ?? 0);
  if (!api) {
    library.close();
    throw new XlaserveError("PLUGIN_NOT_FOUND", `GetPjrtApi of ${path} returned NULL`, { plugin: path });
  }
  const p = api as Pointer;
  // The header (struct_size, extension_start, PJRT_Api_Version) is the same in every version.
  const versionOffset = LAYOUT_0_113.table.field("pjrt_api_version").offset;
  const facts: TableFacts = {
    structSize: Number(read.u64(p, 0)),
    major: read.i32(p, versionOffset + PJRT_Api_Version.field("major_version").offset),
    minor: read.i32(p, versionOffset + PJRT_Api_Version.field("minor_version").offset),
  };
  return { path, library, api, facts };
}

import type { CompileOptions } from "../backend.ts";
import type { Config } from "./schema.ts";

/** The compile options a worker configured this way compiles (and looks up cached programs) with. */
export function compileOptionsOf(config: Config): CompileOptions {
  return { deterministic: config.pjrt.deterministic, keepLocations: config.pjrt.keepLocations };
}

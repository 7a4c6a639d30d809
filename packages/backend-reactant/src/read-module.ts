import { asXlaserveError } from "@xlaserve/core";
import { type Module, parseModule } from "@xlaserve/stablehlo";

/** Parses StableHLO text; errors are core's XlaserveError (MODULE_INVALID / UNSUPPORTED). */
export function readModule(text: string, origin = "<module>"): Module {
  try {
    return parseModule(text, origin);
  } catch (e) {
    throw asXlaserveError(e);
  }
}

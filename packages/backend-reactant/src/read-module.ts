import { asXlaserveError } from "@xlaserve/core";
import { type Module, isBytecode, parseModule, readPortableArtifact } from "@xlaserve/stablehlo";

/** Parses StableHLO text; errors are core's XlaserveError (MODULE_INVALID / UNSUPPORTED). */
export function readModule(text: string, origin = "<module>"): Module {
  try {
    return parseModule(text, origin);
  } catch (e) {
    throw asXlaserveError(e);
  }
}

/**
 * A module file's bytes, text or portable artifact (MLIR bytecode of VHLO), as the engine reads
 * them: types it cannot run are UNSUPPORTED either way.
 */
export function readModuleBytes(bytes: Uint8Array, origin = "<module>"): Module {
  if (!isBytecode(bytes)) return readModule(new TextDecoder().decode(bytes), origin);
  try {
    return readPortableArtifact(bytes, origin, { strict: true });
  } catch (e) {
    throw asXlaserveError(e);
  }
}

import { AttrTypeTable } from "./bytecode/attr-types.ts";
import { type Container, isBytecode, readContainer } from "./bytecode/container.ts";
import { IrReader } from "./bytecode/ir.ts";
import { ModuleError } from "./errors.ts";
import type { Module } from "./ir.ts";
import { toModule } from "./vhlo/to-module.ts";

/** The newest StableHLO release whose portable artifacts this reader knows. */
export const NEWEST_STABLEHLO = [1, 20, 0] as const;

export interface ReadOptions {
  /** The engine's reading: types it cannot run are UNSUPPORTED, as the text parser reports them. */
  readonly strict?: boolean;
}

export interface PortableInfo {
  readonly producer: string;
  /** StableHLO version from the producer string (`StableHLO_v1.15.0`), or null. */
  readonly stablehloVersion: string | null;
  readonly bytecodeVersion: number;
}

export { isBytecode };

/**
 * Reads a StableHLO portable artifact (MLIR bytecode of the VHLO dialect) into the program
 * model. Errors are MODULE_INVALID naming the artifact, the file offset and what was expected,
 * or UNSUPPORTED (strict) for types the engine does not run; never anything else, whatever the
 * bytes.
 */
export function readPortableArtifact(bytes: Uint8Array, origin = "<artifact>", options: ReadOptions = {}): Module {
  return guard(origin, () => {
    const c = readContainer(bytes, origin);
    checkProducer(c);
    const table = new AttrTypeTable(c);
    const top = new IrReader(c, table).readTopLevel();
    return toModule(top, table, { origin, strict: options.strict ?? false });
  });
}

export function portableInfo(bytes: Uint8Array, origin = "<artifact>"): PortableInfo {
  return guard(origin, () => {
    const c = readContainer(bytes, origin);
    return { producer: c.producer, stablehloVersion: producerVersion(c.producer), bytecodeVersion: c.version };
  });
}

function producerVersion(producer: string): string | null {
  return /^StableHLO_v(\d+\.\d+\.\d+)/.exec(producer)?.[1] ?? null;
}

function checkProducer(c: Container): void {
  const v = producerVersion(c.producer);
  if (!v) return;
  const parts = v.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const a = parts[i] as number;
    const b = NEWEST_STABLEHLO[i] as number;
    if (a < b) return;
    if (a > b) {
      throw new ModuleError(
        "MODULE_INVALID",
        `${c.origin}: the artifact was written by StableHLO ${v}, newer than ${NEWEST_STABLEHLO.join(".")}, the newest this reader knows`,
        {
          origin: c.origin,
          offset: 5,
          expected: `a producer of StableHLO ${NEWEST_STABLEHLO.join(".")} or older`,
          producer: c.producer,
        },
      );
    }
  }
}

/** Anything but a ModuleError escaping the reader (a stack overflow on absurd nesting) becomes one. */
function guard<T>(origin: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof ModuleError) throw e;
    const message = e instanceof Error ? e.message : String(e);
    throw new ModuleError(
      "MODULE_INVALID",
      `${origin}: unreadable MLIR bytecode: ${message}`,
      { origin },
      { cause: e },
    );
  }
}

import type { AbstractBackend } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";

/** Where a backend comes from: a module and the factory it exports, called with `args`. */
export interface BackendSpec {
  /** Module specifier ("@xlaserve/backend-reactant" or an absolute path). */
  readonly module: string;
  /** The factory: `(args) => AbstractBackend`. */
  readonly export: string;
  readonly args?: unknown;
}

/** Imports `spec.module` and creates the backend with its factory (on whichever thread calls it). */
export async function createFromSpec(spec: BackendSpec): Promise<AbstractBackend> {
  const mod = (await import(spec.module)) as Record<string, unknown>;
  const factory = mod[spec.export] as ((args: unknown) => AbstractBackend | Promise<AbstractBackend>) | undefined;
  if (typeof factory !== "function") throw new XlaserveError("INTERNAL", `${spec.module} exports no ${spec.export}`);
  return await factory(spec.args);
}

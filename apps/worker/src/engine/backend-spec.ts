import type { AbstractBackend, BackendSpec } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";

export type { BackendSpec } from "@xlaserve/core";

/** Imports `spec.module` and creates the backend with its factory (on whichever thread calls it). */
export async function createFromSpec(spec: BackendSpec): Promise<AbstractBackend> {
  const mod = (await import(spec.module)) as Record<string, unknown>;
  const factory = mod[spec.export] as ((args: unknown) => AbstractBackend | Promise<AbstractBackend>) | undefined;
  if (typeof factory !== "function") throw new XlaserveError("INTERNAL", `${spec.module} exports no ${spec.export}`);
  return await factory(spec.args);
}

import type { Logger } from "@xlaserve/core";
import type { ModelRegistryView, RepositoryEntry } from "../contract.ts";
import { badRequest } from "../http-error.ts";

/** The repository index, only the READY entries when `readyOnly`. */
export function repositoryIndex(registry: ModelRegistryView, readyOnly: boolean): RepositoryEntry[] {
  const entries = registry.repositoryIndex();
  return readyOnly ? entries.filter((e) => e.state === "READY") : entries;
}

/**
 * Loads or unloads a bundle (the caller has checked the bearer token). Triton's load can carry a
 * replacement config or model files; a bundle here is only ever read from the repository folder,
 * so those overrides are refused rather than ignored.
 */
export async function changeModel(
  registry: ModelRegistryView,
  logger: Logger,
  name: string,
  action: "load" | "unload",
  parameterNames: readonly string[],
): Promise<void> {
  if (name === "") throw badRequest(`${action} needs a model name`);
  for (const key of parameterNames) {
    if (key === "config" || key.startsWith("file:")) {
      throw badRequest(
        `parameters.${key}: overriding a model's config or files is not supported; change the bundle instead`,
      );
    }
  }
  logger.info(`repository ${action}`, { model: name });
  if (action === "load") await registry.load(name);
  else await registry.unload(name);
}

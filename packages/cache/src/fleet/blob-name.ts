import { XlaserveError } from "@xlaserve/core";

/** Blob names are `<partition>/<file>`, made by the cache; anything else is refused. */
export function checkBlobName(name: string): string {
  if (!/^[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/.test(name) || name.split("/").some((p) => p.startsWith("."))) {
    throw new XlaserveError("INVALID_ARGUMENT", `not a blob name: ${JSON.stringify(name)}`);
  }
  return name;
}

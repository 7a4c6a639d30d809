import { XlaserveError } from "../errors.ts";

/**
 * Settings that once existed, each with what to use instead: a configuration that still sets one
 * fails with that advice rather than the bare "unknown setting" of a typo.
 */
export const REMOVED_SETTINGS: Readonly<Record<string, string>> = {
  "server.httpThreads":
    "extra HTTP threads with model replicas were removed (they did not beat N worker processes on one port); " +
    "use `xlaserve node --workers N` instead",
};

/** Throws CONFIG_INVALID naming each removed setting `raw` still sets, where it came from, and what to use. */
export function assertNoRemovedSettings(raw: unknown, sources: ReadonlyMap<string, string>): void {
  const found = Object.keys(REMOVED_SETTINGS).filter((path) => valueAt(raw, path) !== undefined);
  if (found.length === 0) return;
  const lines = found.map((p) => `  ${p} (${sources.get(p) ?? "given value"}): ${REMOVED_SETTINGS[p]}`);
  throw new XlaserveError("CONFIG_INVALID", `invalid configuration (removed settings):\n${lines.join("\n")}`, {
    removed: found,
  });
}

export function isRemovedSetting(path: readonly string[]): boolean {
  return path.join(".") in REMOVED_SETTINGS;
}

function valueAt(raw: unknown, path: string): unknown {
  let node = raw;
  for (const key of path.split(".")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

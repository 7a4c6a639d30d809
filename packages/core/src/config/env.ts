import type { TObject, TSchema } from "@sinclair/typebox";
import { ConfigSchema } from "./schema.ts";

/**
 * XLASERVE_* environment variables as a partial configuration. Six short names cover the
 * settings changed most often; every setting is also reachable as
 * XLASERVE_<SECTION>__<FIELD> (FIELD in SNAKE_CASE: XLASERVE_PJRT__MEMORY_FRACTION=0.5).
 * Values stay strings here; the loader coerces them against the schema.
 */

export const ENV_SHORTCUTS: Readonly<Record<string, readonly string[]>> = {
  XLASERVE_ENGINE: ["engine"],
  XLASERVE_PORT: ["server", "port"],
  XLASERVE_HTTP_THREADS: ["server", "httpThreads"],
  XLASERVE_MODEL_REPOSITORY: ["repository", "path"],
  XLASERVE_PJRT_PLUGIN: ["pjrt", "plugin"],
  XLASERVE_LOG_LEVEL: ["log", "level"],
};

const PREFIX = "XLASERVE_";

export interface EnvSettings {
  /** The partial configuration read from the environment. */
  readonly values: Record<string, unknown>;
  /** Dotted setting path -> the variable it came from. */
  readonly sources: ReadonlyMap<string, string>;
  /** Variables of the generic form that name no setting. */
  readonly unknown: readonly { variable: string; path: string }[];
}

export function readEnvSettings(env: Readonly<Record<string, string | undefined>>): EnvSettings {
  const values: Record<string, unknown> = {};
  const sources = new Map<string, string>();
  const unknown: { variable: string; path: string }[] = [];
  for (const [variable, value] of Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!variable.startsWith(PREFIX) || value === undefined || value === "") continue;
    const path = ENV_SHORTCUTS[variable] ?? genericPath(variable);
    if (!path) continue; // other XLASERVE_ variables (test switches and the like) are not settings
    if (!settingExists(path)) {
      unknown.push({ variable, path: path.join(".") });
      continue;
    }
    setPath(values, path, value);
    sources.set(path.join("."), `env ${variable}`);
  }
  return { values, sources, unknown };
}

function genericPath(variable: string): string[] | null {
  const rest = variable.slice(PREFIX.length);
  const split = rest.indexOf("__");
  if (split <= 0) return null;
  return [snakeToCamel(rest.slice(0, split)), snakeToCamel(rest.slice(split + 2))];
}

function snakeToCamel(name: string): string {
  return name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function settingExists(path: readonly string[]): boolean {
  let schema: TSchema | undefined = ConfigSchema;
  for (const key of path) {
    schema = (schema as TObject | undefined)?.properties?.[key];
    if (!schema) return false;
  }
  return true;
}

export function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      node[key] = value;
      return;
    }
    const next = node[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  });
}

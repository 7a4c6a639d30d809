import type { TObject, TSchema } from "@sinclair/typebox";
import { closestName, didYouMean } from "../suggest.ts";
import { isRemovedSetting } from "./removed-settings.ts";
import { ConfigSchema } from "./schema.ts";

/**
 * XLASERVE_* environment variables as a partial configuration. A few short names cover the
 * settings changed most often; every setting is also reachable as
 * XLASERVE_<SECTION>__<FIELD> (FIELD in SNAKE_CASE: XLASERVE_PJRT__MEMORY_FRACTION=0.5).
 * Values stay strings here; the loader coerces them against the schema.
 */

export const ENV_SHORTCUTS: Readonly<Record<string, readonly string[]>> = {
  XLASERVE_ENGINE: ["engine"],
  XLASERVE_HOST: ["server", "host"],
  XLASERVE_PORT: ["server", "port"],
  XLASERVE_AUTH_TOKEN: ["server", "authToken"],
  // Removed (removed-settings.ts): kept so that setting it says what replaced it.
  XLASERVE_HTTP_THREADS: ["server", "httpThreads"],
  XLASERVE_GRPC_PORT: ["server", "grpcPort"],
  XLASERVE_MODEL_REPOSITORY: ["repository", "path"],
  XLASERVE_PJRT_PLUGIN: ["pjrt", "plugin"],
  XLASERVE_LOG_LEVEL: ["log", "level"],
  XLASERVE_LOG_FORMAT: ["log", "format"],
  XLASERVE_ENGINE_THREAD: ["placement", "engineThread"],
  XLASERVE_INLINE_MAX_US: ["placement", "inlineMaxUs"],
};

/**
 * Variables read outside the configuration (process set-up, engine internals, test and benchmark
 * switches). Any other XLASERVE_* name is a likely typo and is warned about (envWarnings).
 */
export const ENV_ONLY_VARIABLES: readonly string[] = [
  "XLASERVE_BLAS_THREADS",
  "XLASERVE_BLAS_LIBRARY",
  "XLASERVE_GPUS",
  "XLASERVE_NODE_PARENT_PID",
  "XLASERVE_MALFORMED_TARGET",
  "XLASERVE_CONFORMANCE_DIR",
  "XLASERVE_SHOW_ERRORS",
  "XLASERVE_TEST_LOGS",
  "XLASERVE_TEST_CACHE_RETRY_MS",
  "XLASERVE_GPU_RESULTS",
];

/** Prefixes of test and benchmark switches, which come and go with the scripts that read them. */
const SWITCH_PREFIXES = ["XLASERVE_BENCH_", "XLASERVE_TEST_"];

const PREFIX = "XLASERVE_";

export interface EnvSettings {
  /** The partial configuration read from the environment. */
  readonly values: Record<string, unknown>;
  /** Dotted setting path -> the variable it came from. */
  readonly sources: ReadonlyMap<string, string>;
  /** Variables of the generic form that name no setting. */
  readonly unknown: readonly { variable: string; path: string; suggestion: string | null }[];
}

export function readEnvSettings(env: Readonly<Record<string, string | undefined>>): EnvSettings {
  const values: Record<string, unknown> = {};
  const sources = new Map<string, string>();
  const unknown: { variable: string; path: string; suggestion: string | null }[] = [];
  for (const [variable, value] of Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!variable.startsWith(PREFIX) || value === undefined || value === "") continue;
    const path = ENV_SHORTCUTS[variable] ?? genericPath(variable);
    if (!path) continue; // other XLASERVE_ variables (test switches and the like) are not settings
    // A removed setting is passed on, for validateConfig to say what replaced it.
    if (!settingExists(path) && !isRemovedSetting(path)) {
      unknown.push({ variable, path: path.join("."), suggestion: closestName(variable, knownVariables()) });
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

/**
 * One warning per XLASERVE_* variable that nothing reads (a misspelt name is silently ignored
 * otherwise), with the closest known name. Generic-form names (XLASERVE_A__B) that name no
 * setting are configuration errors instead (readEnvSettings).
 */
export function envWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  const warnings: string[] = [];
  const known = new Set(knownVariables());
  for (const variable of Object.keys(env).sort()) {
    if (!variable.startsWith(PREFIX) || known.has(variable) || genericPath(variable)) continue;
    if (SWITCH_PREFIXES.some((p) => variable.startsWith(p))) continue;
    warnings.push(`${variable} is not a variable xlaserve reads (ignored)${didYouMean(variable, known)}`);
  }
  return warnings;
}

/** Every name xlaserve reads: the shortcuts, the env-only variables and each setting's generic form. */
function knownVariables(): string[] {
  const generic: string[] = [];
  for (const [section, schema] of Object.entries((ConfigSchema as TObject).properties)) {
    const fields = (schema as TObject).properties;
    if (!fields) continue;
    for (const field of Object.keys(fields)) generic.push(`${PREFIX}${camelToSnake(section)}__${camelToSnake(field)}`);
  }
  return [...Object.keys(ENV_SHORTCUTS), ...ENV_ONLY_VARIABLES, ...generic];
}

function camelToSnake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
}

import { existsSync, readFileSync } from "node:fs";
import type { TSchema } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { XlaserveError } from "../errors.ts";
import { readEnvSettings } from "./env.ts";
import { assertNoRemovedSettings } from "./removed-settings.ts";
import { type Config, ConfigSchema } from "./schema.ts";

/**
 * Builds the configuration: defaults, overridden by a YAML or JSON file, overridden by XLASERVE_*
 * environment variables. Strings are coerced to the schema's types (env values are all strings).
 * An invalid configuration throws CONFIG_INVALID listing every bad field, not just the first.
 */

export interface LoadConfigOptions {
  /** A .yaml/.yml/.json file; YAML is assumed for any other name (JSON is valid YAML). */
  readonly file?: string;
  /** Defaults to process.env; pass {} to ignore the environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Values that replace the defaults but yield to the file and the environment (a platform's
   * conventions, such as KServe's model directory and port), with where they came from.
   */
  readonly base?: { readonly values: Record<string, unknown>; readonly source: string };
}

export interface ConfigProblem {
  /** Dotted path of the setting ("server.port"). */
  readonly path: string;
  /** What the schema wants ("an integer from 0 to 65535"). */
  readonly expected: string;
  /** The value found, as JSON. */
  readonly found: string;
  /** Where the value came from: "file config.yaml", "env XLASERVE_PORT", "default". */
  readonly source: string;
}

export function loadConfig(options: LoadConfigOptions = {}): Config {
  const fileValues = options.file ? readConfigFile(options.file) : {};
  const env = readEnvSettings(options.env ?? process.env);
  const sources = new Map<string, string>();
  const base = options.base?.values ?? {};
  for (const path of leafPaths(base)) sources.set(path, options.base!.source);
  if (options.file) for (const path of leafPaths(fileValues)) sources.set(path, `file ${options.file}`);
  for (const [path, source] of env.sources) sources.set(path, source);

  const merged = mergeDeep(mergeDeep(base, fileValues), env.values);
  const problems: ConfigProblem[] = env.unknown.map((u) => ({
    path: u.path,
    expected: `a known setting${u.suggestion ? ` (did you mean ${u.suggestion}?)` : ""}`,
    found: "an unknown setting",
    source: `env ${u.variable}`,
  }));
  return validateConfig(merged, sources, problems);
}

/** Validates an already-merged raw object (coercing and filling defaults). */
export function validateConfig(
  raw: unknown,
  sources: ReadonlyMap<string, string> = new Map(),
  earlier: readonly ConfigProblem[] = [],
): Config {
  assertNoRemovedSettings(raw, sources);
  const value = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, Value.Clone(raw ?? {})));
  const problems = [...earlier, ...inexactIntegers(ConfigSchema, raw, "", sources)];
  const seen = new Set<string>(problems.map((p) => p.path));
  for (const error of Value.Errors(ConfigSchema, value)) {
    const unknownKey = error.type === ValueErrorType.ObjectAdditionalProperties;
    const path = pointerToPath(error.path);
    if (seen.has(path)) continue;
    seen.add(path);
    problems.push({
      path,
      expected: unknownKey ? "a known setting" : describeExpected(error.schema),
      found: unknownKey ? "an unknown setting" : (JSON.stringify(error.value) ?? "nothing"),
      source: sources.get(path) ?? "given value",
    });
  }
  if (problems.length > 0) {
    const lines = problems.map((p) => `  ${p.path}: expected ${p.expected}, found ${p.found} (${p.source})`);
    throw new XlaserveError(
      "CONFIG_INVALID",
      `invalid configuration (${problems.length} field${problems.length === 1 ? "" : "s"}):\n${lines.join("\n")}`,
      { errors: problems },
    );
  }
  return value as Config;
}

function readConfigFile(file: string): Record<string, unknown> {
  if (!existsSync(file)) {
    throw new XlaserveError("CONFIG_INVALID", `configuration file ${file} does not exist`, { file });
  }
  const text = readFileSync(file, "utf8");
  let parsed: unknown;
  try {
    parsed = file.endsWith(".json") ? JSON.parse(text) : Bun.YAML.parse(text);
  } catch (cause) {
    throw new XlaserveError(
      "CONFIG_INVALID",
      `configuration file ${file} cannot be parsed: ${(cause as Error).message}`,
      {
        file,
      },
    );
  }
  if (parsed === null || parsed === undefined) return {}; // an empty file means "all defaults"
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new XlaserveError("CONFIG_INVALID", `configuration file ${file} must hold a mapping at the top level`, {
      file,
    });
  }
  return parsed as Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function mergeDeep(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeDeep(current, value) : value;
  }
  return out;
}

function leafPaths(value: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(value).flatMap(([key, v]) =>
    isPlainObject(v) ? [`${prefix}${key}`, ...leafPaths(v, `${prefix}${key}.`)] : [`${prefix}${key}`],
  );
}

function pointerToPath(pointer: string): string {
  return pointer.replace(/^\//, "").split("/").join(".") || "(root)";
}

/**
 * Integer settings given something that is not exactly an integer (1.5, "1.5", "1e1"): TypeBox's
 * Convert truncates those to a valid integer, which would silently run with another value.
 */
function inexactIntegers(
  schema: TSchema,
  raw: unknown,
  path: string,
  sources: ReadonlyMap<string, string>,
): ConfigProblem[] {
  if (schema.type === "integer") {
    const exact =
      typeof raw === "number" ? Number.isInteger(raw) : typeof raw === "string" ? /^\s*[+-]?\d+\s*$/.test(raw) : true;
    if (exact) return [];
    return [
      {
        path,
        expected: describeExpected(schema),
        found: JSON.stringify(raw),
        source: sources.get(path) ?? "given value",
      },
    ];
  }
  const properties = schema.properties as Record<string, TSchema> | undefined;
  if (!properties || raw === null || typeof raw !== "object") return [];
  return Object.entries(properties).flatMap(([key, child]) =>
    key in raw
      ? inexactIntegers(child, (raw as Record<string, unknown>)[key], path ? `${path}.${key}` : key, sources)
      : [],
  );
}

/** Human wording of what a schema accepts, for the error list. */
function describeExpected(schema: TSchema): string {
  if (Array.isArray(schema.anyOf)) {
    const literals = (schema.anyOf as TSchema[]).map((s) => s.const).filter((c) => c !== undefined);
    if (literals.length === schema.anyOf.length) return `one of ${literals.join(", ")}`;
  }
  const bounds: string[] = [];
  if (schema.minimum !== undefined) bounds.push(`>= ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) bounds.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) bounds.push(`<= ${schema.maximum}`);
  if (schema.exclusiveMaximum !== undefined) bounds.push(`< ${schema.exclusiveMaximum}`);
  const range = bounds.length ? ` ${bounds.join(" and ")}` : "";
  switch (schema.type) {
    case "integer":
      return `an integer${range}`;
    case "number":
      return `a number${range}`;
    case "boolean":
      return "true or false";
    case "string":
      return schema.minLength ? "a non-empty string" : "a string";
    case "object":
      return "a mapping";
    default:
      return "a valid value";
  }
}

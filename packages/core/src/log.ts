/**
 * Structured logging: one JSON object per line on stderr (or readable text), with a level
 * threshold. Small on purpose: the worker logs one line per model load at info and one per
 * request at debug, and log shippers want JSON.
 */

export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** auto: text when the lines go to a terminal, JSON otherwise (files, pipes, log shippers). */
export type LogFormat = "auto" | "json" | "text";

/**
 * A record's fields. `detail` holds what a log shipper wants and a person reading a terminal
 * does not (every program's timing, raw byte counts beside their formatted form): JSON lines
 * carry its fields beside the others, the human format leaves them out so the line stays short.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line (e.g. {model: "mlp"}). */
  child(fields: Record<string, unknown>): Logger;
  readonly level: LogLevel;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where lines go; defaults to stderr. Tests pass an array collector. */
  sink?: (line: string) => void;
  /** Whether the lines go to a terminal (for format auto); defaults to stderr's isTTY. */
  tty?: boolean;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(options: LoggerOptions = {}, bound: Record<string, unknown> = {}): Logger {
  const level = options.level ?? "info";
  const asked = options.format ?? "auto";
  const format = asked === "auto" ? ((options.tty ?? process.stderr.isTTY === true) ? "text" : "json") : asked;
  const sink = options.sink ?? ((line: string) => process.stderr.write(`${line}\n`));
  const emit = (at: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[at] < RANK[level]) return;
    const { detail, ...shown } = fields ?? {};
    const time = new Date().toISOString();
    if (format === "text") {
      sink(formatText({ time, level: at, msg, ...bound, ...shown }));
      return;
    }
    const extra = detail !== null && typeof detail === "object" ? detail : detail === undefined ? {} : { detail };
    sink(JSON.stringify({ time, level: at, msg, ...bound, ...shown, ...extra }, jsonSafe));
  };
  return {
    level,
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger(options, { ...bound, ...fields }),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

/** One line for a person: time of day, level, message, then key=value with nested values compact. */
function formatText(record: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = record;
  const extras = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${compact(v)}`)
    .join(" ");
  const clock = String(time).slice(11, 23);
  return `${clock} ${String(level).toUpperCase().padEnd(5)} ${msg}${extras ? ` ${extras}` : ""}`;
}

function compact(v: unknown): string {
  if (typeof v === "string") return /^[^\s"=]*$/.test(v) && v !== "" ? v : JSON.stringify(v);
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Error) return JSON.stringify(v.message);
  if (Array.isArray(v)) return `[${v.map(compact).join(", ")}]`;
  if (v !== null && typeof v === "object") {
    const parts = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${k}=${compact(x)}`);
    return `{${parts.join(" ")}}`;
  }
  return String(v);
}

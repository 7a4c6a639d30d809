import { XlaserveError, closestName, didYouMean, isXlaserveError } from "@xlaserve/core";

/**
 * Errors the person at the keyboard made, and how they are shown: one line naming the problem,
 * never a stack trace (that is kept for faults of xlaserve itself).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    /** Exit status: 2 for a command line that cannot be run as written. */
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

/** parseArgs' complaint about an unknown or malformed flag, with the closest known flag. */
export function flagError(err: Error, knownFlags: readonly string[]): UsageError {
  const unknown = /Unknown option '(-{1,2}[^']+)'/.exec(err.message)?.[1];
  if (unknown) {
    const name = unknown.replace(/^-+/, "").split("=")[0] as string;
    const guess = closestName(name, knownFlags);
    return new UsageError(`unknown option ${unknown}${guess ? `; did you mean --${guess}?` : ""}`);
  }
  // "Option '--port <value>' argument missing" and the like: parseArgs' own words are clear.
  return new UsageError(err.message.replace(/\. To specify a positional argument.*$/s, ""));
}

/** "unknown command" with the closest command. */
export function commandError(command: string, commands: readonly string[]): UsageError {
  return new UsageError(`unknown command "${command}"${didYouMean(command, commands)}`);
}

/** A flag's value that cannot be used, as a configuration error naming the flag. */
export function badFlagValue(flag: string, value: string, why: string): XlaserveError {
  return new XlaserveError("CONFIG_INVALID", `--${flag} ${JSON.stringify(value)}: ${why}`);
}

/** Errors shown without a stack: usage, configuration, bundles, and the system's own (ENOENT, EADDRINUSE). */
export function isUserError(err: unknown): boolean {
  if (err instanceof UsageError || isXlaserveError(err)) return true;
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && /^E[A-Z]+$/.test(code);
}

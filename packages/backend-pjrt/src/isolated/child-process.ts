import { XlaserveError } from "@xlaserve/core";

export interface ChildResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  /** Killed because `signal` aborted (its owner was disposed). */
  readonly aborted: boolean;
}

/**
 * Runs a TypeScript file of this package in a fresh Bun process and collects its output. A child
 * that aborts (XLA CHECK failures, a plugin that crashes on load) ends only itself. The child is
 * killed when `timeoutMs` passes or `signal` aborts, so none outlives its use (a compile can run
 * for minutes).
 */
export async function runChild(
  script: string,
  argv: readonly string[],
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ChildResult> {
  const child = Bun.spawn([process.execPath, script, ...argv], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: process.env,
  });
  let timedOut = false;
  let aborted = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  const abort = () => {
    aborted = true;
    child.kill("SIGKILL");
  };
  if (signal?.aborted) abort();
  else signal?.addEventListener("abort", abort, { once: true });
  try {
    const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    await child.exited;
    return {
      exitCode: child.exitCode,
      signal: child.signalCode == null ? null : String(child.signalCode),
      stdout,
      stderr,
      timedOut,
      aborted,
    };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", abort);
  }
}

/** The last line of stdout that parses as JSON: the child's answer (plugins may print too). */
export function lastJsonLine(stdout: string): unknown {
  const lines = stdout.trim().split("\n").reverse();
  for (const line of lines) {
    const text = line.trim();
    if (!text.startsWith("{")) continue;
    try {
      return JSON.parse(text);
    } catch {
      // not the answer line
    }
  }
  return undefined;
}

/** The child's serialized XlaserveError, rebuilt on this side. */
export function errorFromJson(value: unknown): XlaserveError | undefined {
  if (!value || typeof value !== "object" || !("error" in value)) return undefined;
  const e = (value as { error: { code?: string; message?: string; details?: Record<string, unknown> } }).error;
  const code = (e.code ?? "INTERNAL") as XlaserveError["code"];
  return new XlaserveError(code, e.message ?? "child process failed", e.details ?? {});
}

/** The tail of a child's stderr, for an error message. */
export function tail(text: string, max = 2000): string {
  const trimmed = text.trim();
  return trimmed.length > max ? `...${trimmed.slice(-max)}` : trimmed;
}

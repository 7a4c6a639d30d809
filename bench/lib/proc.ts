/**
 * Spawning benchmark children with a time limit. Output is streamed line by line so a caller can
 * time the moment a line appears (e.g. "first result printed") as well as the whole process.
 */

export interface ProcessOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Kill (SIGKILL) the child after this many ms. Default 10 minutes. */
  readonly timeoutMs?: number;
  /** Called for every line of stdout / stderr with ms since spawn. */
  readonly onLine?: (line: string, stream: "stdout" | "stderr", atMs: number) => void;
  /** Echo the child's stderr to ours (prefixed). */
  readonly echoStderr?: string | false;
}

export interface ProcessResult {
  readonly command: string[];
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  /** Spawn to exit, ms. */
  readonly wallMs: number;
  /** Every stdout line with its arrival time since spawn. */
  readonly stdoutLines: readonly { line: string; atMs: number }[];
}

export interface RunningProcess {
  readonly pid: number;
  readonly t0: number;
  readonly done: Promise<ProcessResult>;
  kill(signal?: NodeJS.Signals | number): void;
}

/** Starts a child; `done` resolves when it exits (never rejects on a non-zero exit). */
export function startProcess(command: string[], options: ProcessOptions = {}): RunningProcess {
  const env = { ...process.env, ...(options.env ?? {}) } as Record<string, string>;
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const t0 = performance.now();
  const child = Bun.spawn(command, { cwd: options.cwd, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs ?? 600_000);
  const stdoutLines: { line: string; atMs: number }[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>, which: "stdout" | "stderr"): Promise<string> => {
    const decoder = new TextDecoder();
    let all = "";
    let pending = "";
    for await (const chunk of stream) {
      const atMs = performance.now() - t0;
      const text = decoder.decode(chunk, { stream: true });
      all += text;
      pending += text;
      let nl = pending.indexOf("\n");
      while (nl >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        emit(line, which, atMs);
        nl = pending.indexOf("\n");
      }
    }
    if (pending) emit(pending, which, performance.now() - t0);
    return all;
  };
  const emit = (line: string, which: "stdout" | "stderr", atMs: number) => {
    if (which === "stdout") stdoutLines.push({ line, atMs });
    if (which === "stderr" && options.echoStderr !== false && options.echoStderr !== undefined) {
      process.stderr.write(`${options.echoStderr}${line}\n`);
    }
    options.onLine?.(line, which, atMs);
  };
  const done = (async (): Promise<ProcessResult> => {
    const [stdout, stderr] = await Promise.all([pump(child.stdout, "stdout"), pump(child.stderr, "stderr")]);
    await child.exited;
    const wallMs = performance.now() - t0;
    clearTimeout(timer);
    return {
      command,
      code: child.exitCode,
      signal: child.signalCode == null ? null : String(child.signalCode),
      timedOut,
      stdout,
      stderr,
      wallMs,
      stdoutLines,
    };
  })();
  return { pid: child.pid, t0, done, kill: (signal = "SIGTERM") => child.kill(signal) };
}

export function runProcess(command: string[], options: ProcessOptions = {}): Promise<ProcessResult> {
  return startProcess(command, options).done;
}

/** The last stdout line that parses as a JSON object, or null. */
export function lastJsonLine(out: string): Record<string, unknown> | null {
  const lines = out.trim().split("\n").reverse();
  for (const line of lines) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      return JSON.parse(t) as Record<string, unknown>;
    } catch {
      // not JSON; keep looking
    }
  }
  return null;
}

/** A one-line description of a failed child for the result's errors. */
export function describeFailure(r: ProcessResult): string {
  const why = r.timedOut ? "timed out" : r.signal ? `killed by ${r.signal}` : `exited with ${r.code}`;
  const text = `${r.stderr}\n${r.stdout}`.trim();
  const lines = text.split("\n");
  // Bun prints source context around a thrown error: lead with the error line(s) themselves.
  const errorLines = lines
    .filter((l) => /\b\w*Error\b[:\s]|^error:|Traceback|panic|CHECK failed|Aborted/i.test(l))
    .slice(0, 4);
  const tail = lines.slice(-6);
  const shown = [...errorLines, ...(errorLines.length ? ["..."] : []), ...tail].join("\n").trim();
  return `${r.command.slice(0, 4).join(" ")} ${why}${shown ? `:\n${shown}` : ""}`;
}

/** Child env that pins BLAS threads; used by every CPU-side measurement. */
export function blasEnv(threads: number): Record<string, string> {
  const t = String(threads);
  return { OPENBLAS_NUM_THREADS: t, OMP_NUM_THREADS: t };
}

/**
 * A benchmark child spoken to one line at a time: the parent writes a command line on its stdin
 * and reads the next JSON line from its stdout. Two such children (xlaserve and JAX) can then take
 * turns on the GPU in short blocks, so both sides see the same host speed: the host's speed drifts
 * on a scale of seconds, far longer than a block.
 */
import type { Subprocess } from "bun";

export class LineChild {
  private readonly child: Subprocess<"pipe", "pipe", "pipe">;
  private readonly lines: string[] = [];
  private waiting: ((line: string | null) => void) | null = null;
  private ended = false;
  private broken = false;
  private stderrTail = "";

  constructor(
    readonly label: string,
    command: string[],
    env: Record<string, string> = {},
  ) {
    this.child = Bun.spawn(command, {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ...env } as Record<string, string>,
    });
    void this.pump();
    void this.pumpStderr();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of this.child.stdout) {
      pending += decoder.decode(chunk, { stream: true });
      let nl = pending.indexOf("\n");
      while (nl >= 0) {
        this.push(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        nl = pending.indexOf("\n");
      }
    }
    if (pending) this.push(pending);
    this.ended = true;
    this.waiting?.(null);
    this.waiting = null;
  }

  private async pumpStderr(): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of this.child.stderr) {
      this.stderrTail = (this.stderrTail + decoder.decode(chunk, { stream: true })).slice(-2000);
    }
  }

  private push(line: string): void {
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve(line);
    } else {
      this.lines.push(line);
    }
  }

  private nextLine(timeoutMs: number): Promise<string | null> {
    if (this.broken) return Promise.reject(new Error(`${this.label}: an earlier answer timed out`));
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        // A late answer would otherwise answer the next request: the child is out of step for good.
        this.broken = true;
        reject(new Error(`${this.label}: no answer within ${timeoutMs} ms; stderr: ${this.stderrTail.slice(-600)}`));
      }, timeoutMs);
      this.waiting = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
    });
  }

  /** The next stdout line that is a JSON object (other lines are skipped). */
  async nextJson(timeoutMs = 120_000): Promise<Record<string, unknown>> {
    for (;;) {
      const line = await this.nextLine(timeoutMs);
      if (line === null) {
        await this.child.exited;
        throw new Error(`${this.label} exited (${this.child.exitCode}); stderr: ${this.stderrTail.slice(-800)}`);
      }
      const t = line.trim();
      if (!t.startsWith("{")) continue;
      try {
        return JSON.parse(t) as Record<string, unknown>;
      } catch {
        // a line that only looks like JSON; keep reading
      }
    }
  }

  /** Writes one command line and returns the JSON line answering it. */
  async request(command: string, timeoutMs = 120_000): Promise<Record<string, unknown>> {
    this.child.stdin.write(`${command}\n`);
    this.child.stdin.flush();
    return this.nextJson(timeoutMs);
  }

  async close(): Promise<void> {
    try {
      this.child.stdin.write("quit\n");
      this.child.stdin.end();
    } catch {
      // already gone
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.child.exited;
    clearTimeout(timer);
  }
}

import type { Subprocess } from "bun";

/** What the supervisor starts for one child. */
export interface ChildSpec {
  readonly name: string;
  readonly cmd: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface SupervisorOptions {
  /** First restart delay; doubles per consecutive failure. Default 1 s. */
  readonly backoffMs?: number;
  /** The longest restart delay. Default 30 s. */
  readonly backoffCapMs?: number;
  /** A child that ran this long counts as stable: its failure count starts over. Default 60 s. */
  readonly stableMs?: number;
  /** Consecutive failures of one child after which the node exits 1; 0 never gives up. */
  readonly maxRestarts?: number;
  /** SIGTERM to SIGKILL at shutdown: the longest a child's drain may take. Default 30 s. */
  readonly graceMs?: number;
  /** Where prefixed lines go. Default the process's stdout / stderr. */
  readonly out?: (line: string) => void;
  readonly err?: (line: string) => void;
}

interface Child {
  readonly spec: ChildSpec;
  proc: Subprocess<"ignore", "pipe", "pipe"> | null;
  failures: number;
  startedAt: number;
  restarts: number;
}

/**
 * The node supervisor: starts every child with its output piped, writes their lines to the
 * node's own output prefixed with the child's name (whole lines only, so they never
 * interleave), restarts a child that dies after a delay that doubles per consecutive failure
 * (capped; a stable run resets it), and on shutdown sends every child SIGTERM (they drain),
 * waits out the grace period and SIGKILLs what is left.
 */
export class Supervisor {
  readonly #children: Child[];
  readonly #opts: Required<Omit<SupervisorOptions, "out" | "err">>;
  readonly #out: (line: string) => void;
  readonly #err: (line: string) => void;
  #stopping = false;
  #exitCode = 0;
  #wake: (() => void) | null = null;
  #stopped: Promise<void>;
  #resolveStopped!: () => void;

  constructor(specs: readonly ChildSpec[], opts: SupervisorOptions = {}) {
    this.#children = specs.map((spec) => ({ spec, proc: null, failures: 0, startedAt: 0, restarts: 0 }));
    this.#opts = {
      backoffMs: opts.backoffMs ?? 1000,
      backoffCapMs: opts.backoffCapMs ?? 30_000,
      stableMs: opts.stableMs ?? 60_000,
      maxRestarts: opts.maxRestarts ?? 0,
      graceMs: opts.graceMs ?? 30_000,
    };
    this.#out = opts.out ?? ((l) => process.stdout.write(`${l}\n`));
    this.#err = opts.err ?? ((l) => process.stderr.write(`${l}\n`));
    this.#stopped = new Promise((r) => {
      this.#resolveStopped = r;
    });
  }

  /** Live child pids by name (for tests and the status line). */
  pids(): Record<string, number | null> {
    return Object.fromEntries(this.#children.map((c) => [c.spec.name, c.proc?.pid ?? null]));
  }

  /** Runs until shutdown; resolves with the node's exit code once every child is gone. */
  async run(): Promise<number> {
    const loops = this.#children.map((c) => this.#supervise(c));
    await this.#stopped;
    await this.#shutdownChildren();
    await Promise.all(loops);
    this.log(`node stopped (exit ${this.#exitCode})`);
    return this.#exitCode;
  }

  /** Asks the node to stop (idempotent: the first code wins). */
  shutdown(code = 0): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#exitCode = code;
    this.#wake?.();
    this.#resolveStopped();
  }

  /** A second signal: the children stop at once (a worker ends on its second SIGTERM). */
  hurry(): void {
    for (const c of this.#children) c.proc?.kill("SIGTERM");
  }

  log(message: string): void {
    this.#out(`[node] ${message}`);
  }

  async #supervise(c: Child): Promise<void> {
    while (!this.#stopping) {
      let proc: Child["proc"];
      try {
        proc = Bun.spawn([...c.spec.cmd], { env: c.spec.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      } catch (e) {
        this.log(`${c.spec.name} failed to start: ${(e as Error).message}`);
        if (!(await this.#backoff(c))) return;
        continue;
      }
      c.proc = proc;
      c.startedAt = performance.now();
      this.log(`started ${c.spec.name} (pid ${proc.pid}${c.restarts > 0 ? `, restart ${c.restarts}` : ""})`);
      const pumps = [this.#pump(c.spec.name, proc.stdout, this.#out), this.#pump(c.spec.name, proc.stderr, this.#err)];
      const code = await proc.exited;
      await Promise.all(pumps);
      const uptime = performance.now() - c.startedAt;
      const how = proc.signalCode ? `signal ${proc.signalCode}` : `code ${code}`;
      this.log(`${c.spec.name} exited (${how}, up ${(uptime / 1000).toFixed(1)} s)`);
      if (this.#stopping) return;
      if (uptime >= this.#opts.stableMs) c.failures = 0;
      if (!(await this.#backoff(c))) return;
      c.restarts++;
    }
  }

  /** Waits before a restart; false when the node is stopping or the child ran out of restarts. */
  async #backoff(c: Child): Promise<boolean> {
    c.failures++;
    const { maxRestarts, backoffMs, backoffCapMs } = this.#opts;
    if (maxRestarts > 0 && c.failures > maxRestarts) {
      this.log(`${c.spec.name} failed ${c.failures} times in a row (max ${maxRestarts}); stopping the node`);
      this.shutdown(1);
      return false;
    }
    const delay = Math.min(backoffMs * 2 ** (c.failures - 1), backoffCapMs);
    this.log(`restarting ${c.spec.name} in ${delay} ms`);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, delay);
      // Shutdown cuts the wait short: a crash-looping child never delays the node's stop.
      const prev = this.#wake;
      this.#wake = () => {
        clearTimeout(t);
        prev?.();
        resolve();
      };
    });
    return !this.#stopping;
  }

  async #pump(name: string, stream: ReadableStream<Uint8Array>, sink: (line: string) => void): Promise<void> {
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of stream) {
      const text = rest + decoder.decode(chunk, { stream: true });
      const lines = text.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) sink(`[${name}] ${line}`);
    }
    // A crashing child's last words, even without a newline.
    if (rest) sink(`[${name}] ${rest}`);
  }

  async #shutdownChildren(): Promise<void> {
    const live = this.#children.filter((c) => c.proc && c.proc.exitCode === null && c.proc.signalCode === null);
    for (const c of live) c.proc!.kill("SIGTERM");
    if (live.length)
      this.log(`sent SIGTERM to ${live.map((c) => c.spec.name).join(", ")}; waiting up to ${this.#opts.graceMs} ms`);
    await Promise.all(
      live.map(async (c) => {
        const proc = c.proc!;
        const timer = setTimeout(() => {
          this.log(`${c.spec.name} did not exit within ${this.#opts.graceMs} ms; sending SIGKILL`);
          proc.kill("SIGKILL");
        }, this.#opts.graceMs);
        await proc.exited;
        clearTimeout(timer);
      }),
    );
  }
}

import { XlaserveError } from "@xlaserve/core";
import type { LoadAnswer, LoadRequest, OpenRequest, OpenedAnswer } from "./load-thread.ts";

export interface LoadPoolOptions {
  readonly pluginPath: string;
  /** The most threads the pool starts (at least 1). */
  readonly size: number;
  /**
   * Have started threads map in what a first load touches (prefault.ts): the plugin's code (the
   * first thread) and `heapBytes` of each thread's malloc arena. Default: none.
   */
  readonly prefault?: { readonly code: boolean; readonly heapBytes: number };
  /** The threads' script: load-thread.ts unless a test substitutes its own. */
  readonly script?: string;
  /**
   * Hedged loads: extra copies of a load that are given to threads still idle once the loads
   * asked for at the same time have all had a thread. The first copy loaded wins and the others'
   * executables go to `discard` when they finish. How fast a load runs depends on the CPU it lands
   * on (on the H200 host's vCPUs one load took 25-34 ms on some and 38-52 ms on others), and a
   * restart or a reload often loads one program while the other threads sit idle. Default 0 (the
   * backend's default is 1).
   */
  readonly hedge?: number;
  /** Destroys a copy's executable that lost the race (called on the owner's thread). */
  readonly discard?: (handle: number) => void;
}

interface Job {
  /** Address of the PJRT_Client to load into; it must outlive the pool (see close). */
  readonly client: number;
  /** Kept by the job; each copy sent to a thread is a copy of it, transferred. */
  readonly program: ArrayBuffer;
  readonly options: ArrayBuffer;
  readonly resolve: (handle: number) => void;
  readonly reject: (error: XlaserveError) => void;
  /** Copies on threads now. */
  running: number;
  /** Whether the caller has its answer; copies finishing later are discarded. */
  answered: boolean;
  /** The first copy's failure, given to the caller once no copy is left running. */
  failure: XlaserveError | null;
}

interface LoadThread {
  readonly worker: Worker;
  job: Job | null;
  /** Settles when the thread's current copy is answered (or the thread died): close waits for it. */
  done: Promise<void> | null;
  markDone: () => void;
  /** Settles when the thread has opened the plugin (prestart) or died. */
  opened: Promise<void>;
  markOpened: () => void;
}

const THREAD_SCRIPT = new URL("./load-thread.ts", import.meta.url).href;

/** A copy in an ArrayBuffer of its own: the caller keeps its bytes, the copy is transferred. */
function transferable(bytes: Uint8Array): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(buffer).set(bytes);
  return buffer;
}

/** The line of a thread's error report that says what failed (Bun prefixes a code frame). */
function failureLine(report: string): string {
  const text = report.trim();
  return /^\s*(?:\w*Error|error): .*$/m.exec(text)?.[0].trim() ?? text;
}

/**
 * Program loads (PJRT_Executable_DeserializeAndLoad) on threads of their own. A load is CPU work
 * inside the plugin (about 45 ms for ResNet-50) that holds the calling thread; loads into one
 * client from several threads overlap (8 threads gave 7.4x the loads per second of one on the
 * H200: bench/gpu/diag/parallel-loads.ts). Each job goes to an idle thread, else waits its turn;
 * threads start on demand (or all at once: prestart) up to `size`, and an idle one does not keep
 * the process alive.
 *
 * A job resolves to the loaded executable's address, which the caller must adopt on the client's
 * thread; a load the plugin refuses rejects with the XlaserveError the calling-thread path gives.
 */
export class LoadPool {
  private readonly options: LoadPoolOptions;
  private readonly threads = new Set<LoadThread>();
  private readonly idle: LoadThread[] = [];
  private readonly queue: Job[] = [];
  /** Jobs given a thread since the last hedging turn; not empty while a turn is due. */
  private readonly toHedge: Job[] = [];
  private closing: Promise<void> | null = null;
  /** What each prestarted thread reported on opening: ms and what it mapped in. */
  readonly openReports: OpenedAnswer["opened"][] = [];

  constructor(options: LoadPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) {
      throw new XlaserveError("INTERNAL", `a load pool needs at least one thread, got ${options.size}`);
    }
    const hedge = options.hedge ?? 0;
    if (!Number.isInteger(hedge) || hedge < 0 || (hedge > 0 && !options.discard)) {
      throw new XlaserveError("INTERNAL", `hedged loads need an integer hedge >= 0 and a discard, got ${hedge}`);
    }
    this.options = options;
  }

  /** Threads running now (started and not yet dead or terminated). */
  get threadCount(): number {
    return this.threads.size;
  }

  /**
   * Starts every thread now and has it open the plugin, so that a restart's first load does not
   * also wait for a thread to start and import its modules (tens of ms).
   */
  prestart(): void {
    if (this.closing) return;
    while (this.threads.size < this.options.size) {
      const first = this.threads.size === 0;
      const thread = this.start();
      thread.worker.unref();
      const prefault = this.options.prefault;
      const open: OpenRequest = {
        open: this.options.pluginPath,
        prefaultCode: (prefault?.code ?? false) && first,
        prefaultHeapBytes: prefault?.heapBytes ?? 0,
      };
      thread.worker.postMessage(open);
      this.idle.push(thread);
    }
  }

  /** Resolves when every thread started so far has opened the plugin (or died). */
  async ready(): Promise<void> {
    await Promise.all([...this.threads].map((t) => t.opened));
  }

  /** Loads a serialized program; the bytes are copied before this returns. */
  load(client: number, program: Uint8Array, options: Uint8Array): Promise<number> {
    if (this.closing) return Promise.reject(closedError());
    const { promise, resolve, reject } = Promise.withResolvers<number>();
    this.queue.push({
      client,
      program: transferable(program),
      options: transferable(options),
      resolve,
      reject,
      running: 0,
      answered: false,
      failure: null,
    });
    this.dispatch();
    return promise;
  }

  /**
   * Resolves once no copy of an answered load is still running: the losing copies have finished
   * and what they loaded was discarded. A memory probe waits for this so that a spare copy's
   * allocations never count in another model's peak.
   */
  async spareCopiesDone(): Promise<void> {
    for (;;) {
      const spares = [...this.threads].filter((t) => t.job?.answered).map((t) => t.done);
      if (spares.length === 0) return;
      await Promise.all(spares);
    }
  }

  /**
   * Refuses new loads, rejects the waiting ones (DISPOSED), waits for the loads in flight to be
   * answered, then terminates the threads. The client must stay alive until this resolves: a
   * thread may be inside the plugin with it.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    for (const job of this.queue.splice(0)) job.reject(closedError());
    await Promise.all([...this.threads].map((t) => t.done));
    for (const thread of this.threads) thread.worker.terminate();
    this.threads.clear();
    this.idle.length = 0;
  }

  private dispatch(): void {
    const turnDue = this.toHedge.length > 0;
    while (this.queue.length > 0) {
      const thread = this.idle.pop() ?? (this.threads.size < this.options.size ? this.start() : null);
      if (!thread) break;
      const job = this.queue.shift() as Job;
      this.give(thread, job);
      if (this.options.hedge) this.toHedge.push(job);
    }
    if (this.toHedge.length > 0 && !turnDue) {
      // A turn later, so that loads asked for together (a model's programs, a restart's) each get
      // a thread before any copy takes one.
      setImmediate(() => this.hedgeTurn());
    }
  }

  /** Gives the jobs just started copies on idle threads, in turns, while nothing waits. */
  private hedgeTurn(): void {
    const jobs = this.toHedge.splice(0);
    const copies = 1 + (this.options.hedge ?? 0);
    for (let gave = true; gave; ) {
      gave = false;
      for (const job of jobs) {
        if (this.closing || this.queue.length > 0) return;
        if (job.answered || job.running >= copies) continue;
        const thread = this.idle.pop();
        if (!thread) return;
        this.give(thread, job);
        gave = true;
      }
    }
  }

  private start(): LoadThread {
    const worker = new Worker(this.options.script ?? THREAD_SCRIPT);
    const { promise: opened, resolve: markOpened } = Promise.withResolvers<void>();
    const thread: LoadThread = { worker, job: null, done: null, markDone: () => {}, opened, markOpened };
    worker.onmessage = (event: MessageEvent<LoadAnswer | OpenedAnswer>) => {
      if ("opened" in event.data) {
        this.openReports.push(event.data.opened);
        thread.markOpened();
        return;
      }
      this.answered(thread, event.data);
    };
    worker.addEventListener("error", (event) => this.died(thread, `failed: ${failureLine(event.message)}`));
    // An exit without an error event (process.exit on the thread); after an error it is a no-op.
    worker.addEventListener("close", (event) => this.died(thread, `exited (code ${(event as CloseEvent).code})`));
    this.threads.add(thread);
    return thread;
  }

  private give(thread: LoadThread, job: Job): void {
    thread.job = job;
    job.running++;
    const { promise, resolve } = Promise.withResolvers<void>();
    thread.done = promise;
    thread.markDone = resolve;
    thread.worker.ref();
    // Without hedging a job has one copy, which may take the job's own bytes.
    const own = (bytes: ArrayBuffer) => (this.options.hedge ? bytes.slice(0) : bytes);
    const request: LoadRequest = {
      pluginPath: this.options.pluginPath,
      client: job.client,
      program: own(job.program),
      options: own(job.options),
    };
    thread.worker.postMessage(request, [request.program, request.options]);
  }

  /** Takes the thread's copy off it; the job it belonged to, if any. */
  private release(thread: LoadThread): Job | null {
    const job = thread.job;
    thread.job = null;
    thread.done = null;
    thread.markDone();
    if (job) job.running--;
    return job;
  }

  private answered(thread: LoadThread, answer: LoadAnswer): void {
    const job = this.release(thread);
    if (!job) return;
    thread.worker.unref();
    this.idle.push(thread);
    if ("error" in answer) {
      const { code, message, details } = answer.error;
      this.copyFailed(job, new XlaserveError(code, message, { ...details }));
    } else if (job.answered) {
      this.options.discard?.(answer.handle);
    } else {
      job.answered = true;
      job.resolve(answer.handle);
    }
    if (!this.closing) this.dispatch();
  }

  /** A copy's failure fails the job only when no other copy may still load the program. */
  private copyFailed(job: Job, error: XlaserveError): void {
    if (job.answered) return;
    job.failure ??= error;
    if (job.running > 0) return;
    job.answered = true;
    job.reject(job.failure);
  }

  /**
   * A thread that died is dropped (the next job starts another) and its job fails. The plugin
   * call answers its own failures, so a thread dies only around it; had it died after the load
   * (posting the answer failed), that one program would be lost to the client's clean-up.
   */
  private died(thread: LoadThread, why: string): void {
    thread.markOpened();
    if (!this.threads.delete(thread)) return;
    const at = this.idle.indexOf(thread);
    if (at >= 0) this.idle.splice(at, 1);
    thread.worker.terminate();
    const job = this.release(thread);
    if (job) {
      this.copyFailed(
        job,
        new XlaserveError("INTERNAL", `a program load thread ${why}`, { pluginPath: this.options.pluginPath }),
      );
    }
    if (!this.closing) this.dispatch();
  }
}

function closedError(): XlaserveError {
  return new XlaserveError("DISPOSED", "the PJRT backend was disposed before the program was loaded");
}

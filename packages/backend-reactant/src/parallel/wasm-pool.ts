/**
 * A few threads that run WebAssembly modules over one shared memory, for kernels whose rows can
 * be computed apart (fused elementwise trees: fused-simd-split.ts). Each module is compiled once
 * and posted once to each thread, which instantiates it against the same memory; a call writes
 * each thread's arguments into a shared control block and wakes only the threads it uses
 * (wasm-pool-control.ts), runs the first share itself and sleeps until the others finish. No
 * message, allocation or promise is on that path: the wake-up of a sleeping thread is its cost.
 *
 * Threads are started on first use, hold nothing that keeps the process alive (unref), and stop
 * with close(). Each JavaScript thread that runs the engine (the main thread, an engine Worker)
 * has pools of its own.
 */
import {
  ARGC,
  ARGS,
  FAILED,
  MAX_ARGS,
  MODULE,
  PENDING,
  type PoolInit,
  CALLER,
  CLAIM,
  OPEN,
  READY,
  type PoolModule,
  SEQ,
  SLOT,
  STOP,
  slotBase,
  HEADER,
} from "./wasm-pool-control.ts";
import { SplitGovernor } from "./split-governor.ts";

type Run = (...args: number[]) => void;

/** How long a call waits for its threads before it gives up on them (a thread that died). */
const STALL_MS = 60_000;
/** How long a new thread may take to start (a loaded machine takes tens of milliseconds). */
const START_MS = 10_000;

const WORKER_URL = new URL("./wasm-pool-worker.ts", import.meta.url).href;

interface Thread {
  readonly worker: Worker;
  readonly port: MessagePort;
}

export class WasmPool {
  private readonly control: Int32Array;
  private readonly threads: Thread[] = [];
  private readonly modules: WebAssembly.Module[] = [];
  private closed = false;
  /** Shares the caller took from threads that had not started them (tests, benchmarks). */
  taken = 0;
  /** Whether calls are worth splitting now (split-governor.ts). */
  readonly governor = new SplitGovernor();

  /**
   * `capacity`: the most threads one call may use, the calling one included; `script` and
   * `startMs` replace the thread's script and how long it may take to start (tests).
   */
  constructor(
    private readonly memory: WebAssembly.Memory,
    readonly capacity: number,
    private readonly options: { script?: string; startMs?: number } = {},
  ) {
    this.control = new Int32Array(new SharedArrayBuffer((HEADER + Math.max(0, capacity - 1) * SLOT) * 4));
    // No share to take until a call opens one.
    for (let t = 0; t < capacity - 1; t++) this.control[slotBase(t) + CLAIM] = CALLER;
  }

  /** Whether calls can go to the threads (not closed, no thread failed, the governor allows). */
  get usable(): boolean {
    return !this.closed && Atomics.load(this.control, FAILED) === 0 && this.governor.allows(performance.now());
  }

  /** Makes `module` callable on the threads; returns its id for run(). */
  register(module: WebAssembly.Module): number {
    const id = this.modules.length;
    this.modules.push(module);
    const message: PoolModule = { id, module };
    for (const t of this.threads) t.port.postMessage(message);
    return id;
  }

  /**
   * Calls module `id`'s `run` with `shares[s]` for s < n: share 0 on this thread (`local`, the
   * same module's instance here), the others on pool threads. False where a thread failed (its
   * share may be unwritten: the caller computes the whole on its own) or the pool is closed.
   */
  run(id: number, local: Run, shares: readonly (readonly number[])[], n: number): boolean {
    if (!this.usable || n > this.capacity) return false;
    if (this.threads.length < n - 1 && !this.grow(n - 1)) return false;
    const control = this.control;
    const begun = performance.now();
    Atomics.store(control, PENDING, n - 1);
    for (let s = 1; s < n; s++) {
      const base = slotBase(s - 1);
      const args = shares[s] as readonly number[];
      if (args.length > MAX_ARGS) throw new Error(`a pool call takes at most ${MAX_ARGS} arguments`);
      control[base + MODULE] = id;
      control[base + ARGC] = args.length;
      for (let i = 0; i < args.length; i++) control[base + ARGS + i] = args[i] as number;
      Atomics.store(control, base + CLAIM, OPEN);
      Atomics.add(control, base + SEQ, 1);
      Atomics.notify(control, base + SEQ, 1);
    }
    const started = performance.now();
    let own = 0;
    try {
      local(...(shares[0] as readonly number[]));
      own = performance.now() - started;
      // Shares whose thread has not started yet are computed here (the same module, so the
      // same bits), rather than waiting for a thread that has no core.
      for (let s = 1; s < n; s++) {
        const claim = slotBase(s - 1) + CLAIM;
        if (Atomics.compareExchange(control, claim, OPEN, CALLER) !== OPEN) continue;
        this.taken++;
        local(...(shares[s] as readonly number[]));
        Atomics.sub(control, PENDING, 1);
      }
    } finally {
      // Shares still open (local threw) are closed so no thread starts them late.
      for (let s = 1; s < n; s++)
        if (Atomics.compareExchange(control, slotBase(s - 1) + CLAIM, OPEN, CALLER) === OPEN)
          Atomics.sub(control, PENDING, 1);
      this.join();
    }
    const now = performance.now();
    this.governor.record(now - begun, own * n, now);
    return Atomics.load(control, FAILED) === 0;
  }

  private join(): void {
    const control = this.control;
    const deadline = performance.now() + STALL_MS;
    for (;;) {
      const pending = Atomics.load(control, PENDING);
      if (pending === 0) return;
      Atomics.wait(control, PENDING, pending, 1000);
      if (performance.now() > deadline) {
        Atomics.store(control, FAILED, 1);
        throw new Error(`CPU engine: ${pending} pool thread(s) did not finish within ${STALL_MS} ms`);
      }
    }
  }

  /**
   * Starts threads until there are `count`, and waits until each runs its loop. A thread that
   * cannot start (no Worker here, its script not found) closes the pool: calls stay on the
   * calling thread instead of waiting for it.
   */
  private grow(count: number): boolean {
    const first = this.threads.length;
    try {
      while (this.threads.length < count) this.start();
    } catch {
      this.close();
      return false;
    }
    const deadline = performance.now() + (this.options.startMs ?? START_MS);
    for (let t = first; t < count; t++) {
      const ready = slotBase(t) + READY;
      while (Atomics.load(this.control, ready) === 0) {
        const left = deadline - performance.now();
        if (left <= 0) {
          this.close();
          return false;
        }
        Atomics.wait(this.control, ready, 0, left);
      }
    }
    return true;
  }

  private start(): void {
    const thread = this.threads.length;
    const channel = new MessageChannel();
    const worker = new Worker(this.options.script ?? WORKER_URL);
    const init: PoolInit = {
      memory: this.memory,
      control: this.control.buffer as SharedArrayBuffer,
      thread,
      port: channel.port2,
    };
    worker.postMessage(init, [channel.port2]);
    for (let id = 0; id < this.modules.length; id++) {
      const message: PoolModule = { id, module: this.modules[id] as WebAssembly.Module };
      channel.port1.postMessage(message);
    }
    worker.unref();
    this.threads.push({ worker, port: channel.port1 });
  }

  /** Ends every thread; later calls return false. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    Atomics.store(this.control, STOP, 1);
    for (let t = 0; t < this.threads.length; t++) {
      Atomics.add(this.control, slotBase(t) + SEQ, 1);
      Atomics.notify(this.control, slotBase(t) + SEQ);
    }
    for (const t of this.threads) {
      t.port.close();
      t.worker.terminate();
    }
    this.threads.length = 0;
  }

  /** Threads started so far (tests check that small work never starts one). */
  get started(): number {
    return this.threads.length;
  }
}

/**
 * The control block a wasm pool (wasm-pool.ts) and its threads (wasm-pool-worker.ts) share: an
 * Int32Array over a SharedArrayBuffer, a header then one slot per thread. A thread sleeps on its
 * slot's sequence word; the caller writes the slot's module and arguments, bumps the word and
 * wakes that thread alone, then sleeps on PENDING until every woken thread has counted down.
 */

/** Threads still running the current call; the caller waits on it. */
export const PENDING = 0;
/** Set once to end every thread's loop. */
export const STOP = 1;
/** Set by a thread whose call threw (a trap, a module it could not instantiate). */
export const FAILED = 2;
export const HEADER = 4;

/** A slot: [sequence, ready, module id, argument count, arguments...]. */
export const SEQ = 0;
/** Set by the thread when its loop runs: no call goes to a thread before it. */
export const READY = 1;
export const MODULE = 2;
export const ARGC = 3;
export const ARGS = 4;
export const SLOT = 64;
/** The most i32 arguments one call can pass through a slot. */
export const MAX_ARGS = SLOT - ARGS;

export const slotBase = (thread: number) => HEADER + thread * SLOT;

/** What a thread is sent once, when it starts. */
export interface PoolInit {
  readonly memory: WebAssembly.Memory;
  readonly control: SharedArrayBuffer;
  readonly thread: number;
  /** Modules arrive here, read synchronously by the thread when a call names one it lacks. */
  readonly port: MessagePort;
}

/** A module posted to a thread: its `run` export is called with a slot's arguments. */
export interface PoolModule {
  readonly id: number;
  readonly module: WebAssembly.Module;
}

/**
 * The control block a wasm pool (wasm-pool.ts) and its threads (wasm-pool-worker.ts) share: an
 * Int32Array over a SharedArrayBuffer, a header then one slot per thread. A thread sleeps on its
 * slot's sequence word; the caller writes the slot's module and arguments, opens its claim, bumps
 * the word and wakes that thread alone, computes its own share, takes any share still open, then
 * sleeps on PENDING until every share taken by a thread has counted down.
 */

/** Threads still running the current call; the caller waits on it. */
export const PENDING = 0;
/** Set once to end every thread's loop. */
export const STOP = 1;
/** Set by a thread whose call threw (a trap, a module it could not instantiate). */
export const FAILED = 2;
export const HEADER = 4;

/** A slot: [sequence, ready, claim, module id, argument count, arguments...]. */
export const SEQ = 0;
/** Set by the thread when its loop runs: no call goes to a thread before it. */
export const READY = 1;
/**
 * Who computes the slot's share: OPEN until the thread (THREAD) or the caller (CALLER) takes it
 * by compare-and-swap. A caller done with its own share takes the shares no thread has started
 * (a thread still waiting for a core), so a call never waits for a thread that has not begun.
 */
export const CLAIM = 2;
export const OPEN = 0;
export const THREAD = 1;
export const CALLER = 2;
export const MODULE = 3;
export const ARGC = 4;
export const ARGS = 5;
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

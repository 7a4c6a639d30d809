/**
 * A pool thread that says it is ready and then never takes a share: a thread that gets no core.
 */
import { type PoolInit, READY, slotBase } from "../../src/parallel/wasm-pool-control.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent) => {
  const init = event.data as PoolInit;
  const control = new Int32Array(init.control);
  Atomics.store(control, slotBase(init.thread) + READY, 1);
  Atomics.notify(control, slotBase(init.thread) + READY);
};

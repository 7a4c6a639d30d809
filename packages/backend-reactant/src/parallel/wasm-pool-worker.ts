/**
 * One thread of a wasm pool (wasm-pool.ts): instantiates the modules it is posted against the
 * shared memory, once each, and runs its slot's call whenever the caller wakes it. The loop
 * never returns to the event loop until the pool stops, so modules are read from the port
 * synchronously, when a call names one not seen yet (it was posted before that call).
 */
import { type MessagePort as NodePort, receiveMessageOnPort } from "node:worker_threads";
import {
  ARGC,
  ARGS,
  FAILED,
  MODULE,
  PENDING,
  type PoolInit,
  type PoolModule,
  CLAIM,
  OPEN,
  THREAD,
  READY,
  SEQ,
  STOP,
  slotBase,
} from "./wasm-pool-control.ts";

declare const self: Worker;

type Run = (...args: number[]) => void;

function serve(init: PoolInit): void {
  const control = new Int32Array(init.control);
  const base = slotBase(init.thread);
  const modules = new Map<number, WebAssembly.Module>();
  const runs = new Map<number, Run>();
  const args: number[] = [];
  const port = init.port as unknown as NodePort;
  const runFor = (id: number): Run => {
    let run = runs.get(id);
    if (run) return run;
    while (!modules.has(id)) {
      const m = receiveMessageOnPort(port)?.message as PoolModule | undefined;
      if (m) modules.set(m.id, m.module);
    }
    const instance = new WebAssembly.Instance(modules.get(id) as WebAssembly.Module, { e: { m: init.memory } });
    run = instance.exports.run as Run;
    runs.set(id, run);
    return run;
  };
  let seen = 0;
  Atomics.store(control, base + READY, 1);
  Atomics.notify(control, base + READY);
  for (;;) {
    Atomics.wait(control, base + SEQ, seen);
    const seq = Atomics.load(control, base + SEQ);
    if (Atomics.load(control, STOP) !== 0) break;
    if (seq === seen) continue;
    seen = seq;
    // The caller may have taken the share already (this thread woke late), or this may be a
    // later call's share, opened before its sequence bump: the claim decides, not the sequence.
    if (Atomics.compareExchange(control, base + CLAIM, OPEN, THREAD) !== OPEN) continue;
    try {
      const argc = control[base + ARGC] as number;
      args.length = argc;
      for (let i = 0; i < argc; i++) args[i] = control[base + ARGS + i] as number;
      runFor(control[base + MODULE] as number)(...args);
    } catch {
      Atomics.store(control, FAILED, 1);
    }
    if (Atomics.sub(control, PENDING, 1) === 1) Atomics.notify(control, PENDING);
  }
  // The pool terminates this thread once every loop has seen STOP.
  port.close();
}

self.onmessage = (event: MessageEvent) => serve(event.data as PoolInit);

import { JSCallback } from "bun:ffi";
import type { PjrtApi } from "../api/pjrt-api.ts";

/**
 * The one threadsafe JSCallback a loaded plugin calls back through (PJRT_Event_OnReadyCallback:
 * `void (PJRT_Error* error, void* user_arg)`). The plugin calls it on one of its own threads; Bun
 * queues the call to the JS thread, which resolves the waiter registered under `user_arg`.
 * Ownership of `error` passes to the waiter, which converts and destroys it.
 */
export class EventCallbacks {
  private readonly pending = new Map<number, (error: number) => void>();
  private readonly callback: JSCallback;
  private nextId = 1;
  // A pending promise alone does not keep Bun's event loop alive; this interval does, while
  // any event is awaited.
  private keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor() {
    this.callback = new JSCallback(
      (error: number | null, userArg: number | null) => {
        const id = Number(userArg ?? 0);
        const resolve = this.pending.get(id);
        if (!resolve) return;
        this.pending.delete(id);
        if (this.pending.size === 0) this.stopKeepAlive();
        resolve(Number(error ?? 0));
      },
      { args: ["ptr", "ptr"], returns: "void", threadsafe: true },
    );
  }

  get address(): number {
    return Number(this.callback.ptr ?? 0);
  }

  /** Registers a waiter; returns its user_arg and the promise of the event's error pointer. */
  register(): { id: number; done: Promise<number> } {
    const id = this.nextId++;
    const done = new Promise<number>((resolve) => this.pending.set(id, resolve));
    this.keepAlive ??= setInterval(() => {}, 1000);
    return { id, done };
  }

  /** Drops a waiter whose OnReady registration failed. */
  cancel(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.stopKeepAlive();
  }

  private stopKeepAlive(): void {
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }
}

const perApi = new WeakMap<PjrtApi, EventCallbacks>();

export function eventCallbacks(api: PjrtApi): EventCallbacks {
  let callbacks = perApi.get(api);
  if (!callbacks) {
    callbacks = new EventCallbacks();
    perApi.set(api, callbacks);
  }
  return callbacks;
}

import type { ErrorCode } from "@xlaserve/core";
import { CStruct } from "../abi/cstruct.ts";
import {
  PJRT_Event_Destroy_Args,
  PJRT_Event_Error_Args,
  PJRT_Event_IsReady_Args,
  PJRT_Event_OnReady_Args,
} from "../abi/structs.ts";
import type { PjrtApi } from "../api/pjrt-api.ts";
import { eventCallbacks } from "./event-callbacks.ts";

/**
 * How ready events are awaited without blocking Bun's event loop (PJRT_Event_Await would block
 * the only JS thread):
 * - "auto" (the default): PJRT_Event_IsReady on each event-loop turn for the first
 *   AUTO_POLL_MS, then PJRT_Event_OnReady. On the H200, waiting for a ResNet-50 batch-1
 *   execution through the threadsafe JSCallback took 1.6-1.8 ms against 1.1-1.2 ms when polled
 *   (the same program, in one process): the callback's trip to the JS thread costs about 0.5 ms.
 *   Polling keeps the thread busy only while work that short is in flight, and other callbacks
 *   still run between turns; anything longer waits for the callback at no CPU cost.
 * - "callback": PJRT_Event_OnReady with a threadsafe JSCallback from the start.
 * - "poll": PJRT_Event_IsReady on each turn for the first 20 ms, then every millisecond.
 */
export type EventWait = "auto" | "callback" | "poll";

/** How long "auto" polls on event-loop turns before it hands the wait to OnReady, by default. */
export const AUTO_POLL_MS = 5;

/** The wait mode with its polling window ("auto" only), as a client keeps them. */
export interface EventWaitPolicy {
  readonly mode: EventWait;
  readonly autoPollMs: number;
}

export const DEFAULT_EVENT_WAIT: EventWaitPolicy = { mode: "auto", autoPollMs: AUTO_POLL_MS };

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A reusable IsReady call for one event. */
function readiness(api: PjrtApi, event: number): () => boolean {
  const args = new CStruct(PJRT_Event_IsReady_Args, { event });
  return () => {
    api.call("PJRT_Event_IsReady", args);
    return args.getBool("is_ready");
  };
}

/** Polls on event-loop turns for up to `forMs`; true once ready, false if still pending. */
async function pollTurns(isReady: () => boolean, forMs: number): Promise<boolean> {
  const start = performance.now();
  while (!isReady()) {
    if (performance.now() - start >= forMs) return false;
    await nextTurn();
  }
  return true;
}

/** Polls every millisecond until ready. */
async function pollTimers(isReady: () => boolean): Promise<void> {
  while (!isReady()) await Bun.sleep(1);
}

/** OnReady through the plugin's one threadsafe JSCallback; resolves to the error pointer. */
function onReady(api: PjrtApi, event: number): Promise<number> {
  const callbacks = eventCallbacks(api);
  const waiter = callbacks.register();
  try {
    api.call(
      "PJRT_Event_OnReady",
      new CStruct(PJRT_Event_OnReady_Args, { event, callback: callbacks.address, user_arg: waiter.id }),
    );
  } catch (error) {
    callbacks.cancel(waiter.id);
    throw error;
  }
  return waiter.done;
}

/** Returns the event's error pointer (0 on success), owned by the caller. */
async function waitForError(api: PjrtApi, event: number, { mode, autoPollMs }: EventWaitPolicy): Promise<number> {
  const isReady = readiness(api, event);
  const hasOnReady = api.slotAddress("PJRT_Event_OnReady") !== 0;
  const readError = () => api.callReturningError("PJRT_Event_Error", new CStruct(PJRT_Event_Error_Args, { event }));
  if (mode === "callback" && hasOnReady) return isReady() ? readError() : onReady(api, event);
  if (await pollTurns(isReady, mode === "auto" ? autoPollMs : 20)) return readError();
  if (mode === "auto" && hasOnReady) return onReady(api, event);
  await pollTimers(isReady);
  return readError();
}

/**
 * Waits for a PJRT_Event, destroys it, and throws the work's error (converted to `errorCode`,
 * the PJRT_Error read and destroyed) if it failed. A null event is already done.
 */
export async function awaitEvent(
  api: PjrtApi,
  event: number,
  what: string,
  errorCode: ErrorCode = "PJRT_ERROR",
  wait: EventWaitPolicy = DEFAULT_EVENT_WAIT,
): Promise<void> {
  if (!event) return;
  try {
    const error = await waitForError(api, event, wait);
    if (error) throw api.takeError(error, what, errorCode);
  } catch (error) {
    if (error instanceof Error && !error.message.startsWith(what)) error.message = `${what}: ${error.message}`;
    throw error;
  } finally {
    api.call("PJRT_Event_Destroy", new CStruct(PJRT_Event_Destroy_Args, { event }));
  }
}

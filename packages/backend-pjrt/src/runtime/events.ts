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
 * - "callback": PJRT_Event_OnReady with a threadsafe JSCallback; no polling, the JS thread wakes
 *   when the plugin signals. The default where the plugin implements OnReady.
 * - "poll": PJRT_Event_IsReady on the next turns of the event loop, then on short timers.
 */
export type EventWait = "callback" | "poll";

function isReady(api: PjrtApi, event: number): boolean {
  const args = new CStruct(PJRT_Event_IsReady_Args, { event });
  api.call("PJRT_Event_IsReady", args);
  return args.getBool("is_ready");
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Polls until ready: every event-loop turn for the first 20 ms, then every millisecond. */
async function pollUntilReady(api: PjrtApi, event: number): Promise<void> {
  const start = performance.now();
  while (!isReady(api, event)) {
    if (performance.now() - start < 20) await nextTurn();
    else await Bun.sleep(1);
  }
}

/** Returns the event's error pointer (0 on success), owned by the caller. */
async function waitForError(api: PjrtApi, event: number, mode: EventWait): Promise<number> {
  if (mode === "callback" && api.slotAddress("PJRT_Event_OnReady") && !isReady(api, event)) {
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
  await pollUntilReady(api, event);
  return api.callReturningError("PJRT_Event_Error", new CStruct(PJRT_Event_Error_Args, { event }));
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
  mode: EventWait = "callback",
): Promise<void> {
  if (!event) return;
  try {
    const error = await waitForError(api, event, mode);
    if (error) throw api.takeError(error, what, errorCode);
  } catch (error) {
    if (error instanceof Error && !error.message.startsWith(what)) error.message = `${what}: ${error.message}`;
    throw error;
  } finally {
    api.call("PJRT_Event_Destroy", new CStruct(PJRT_Event_Destroy_Args, { event }));
  }
}

import { CStruct } from "../abi/cstruct.ts";
import { PJRT_Event_Destroy_Args, PJRT_Event_Error_Args, PJRT_Event_IsReady_Args } from "../abi/structs.ts";
import type { ErrorCode } from "@xlaserve/core";
import type { PjrtApi } from "../api/pjrt-api.ts";

/** Polling delays (ms): yield to the event loop first, then back off to a few ms. */
const DELAYS = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.05, 0.1, 0.2, 0.5, 1, 2];

function isReady(api: PjrtApi, event: number): boolean {
  const args = new CStruct(PJRT_Event_IsReady_Args, { event });
  api.call("PJRT_Event_IsReady", args);
  return args.getBool("is_ready");
}

/**
 * Waits for a PJRT_Event without blocking Bun's event loop: polls PJRT_Event_IsReady on short
 * timers (PJRT_Event_Await would block the only JS thread, and an OnReady callback would arrive
 * on a plugin thread). Then reads the event's error, destroys the event, and throws the error
 * converted (as `errorCode`) if the work failed. A null event is already done.
 */
export async function awaitEvent(api: PjrtApi, event: number, what: string, errorCode: ErrorCode = "PJRT_ERROR"): Promise<void> {
  if (!event) return;
  try {
    for (let i = 0; !isReady(api, event); i++) {
      await Bun.sleep(DELAYS[Math.min(i, DELAYS.length - 1)] ?? 2);
    }
    const args = new CStruct(PJRT_Event_Error_Args, { event });
    try {
      api.call("PJRT_Event_Error", args, errorCode);
    } catch (error) {
      if (error instanceof Error) error.message = `${what}: ${error.message}`;
      throw error;
    }
  } finally {
    api.call("PJRT_Event_Destroy", new CStruct(PJRT_Event_Destroy_Args, { event }));
  }
}

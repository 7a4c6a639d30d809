import type { Logger } from "@xlaserve/core";
import { XlaserveError, asXlaserveError } from "@xlaserve/core";
import type { Slot } from "./registry-options.ts";

/** Runs `fn` after the slot's earlier loads and unloads (one at a time per model name). */
export function enqueueOnSlot(slot: Slot, fn: () => Promise<void>): Promise<void> {
  const run = slot.chain.then(fn, fn);
  slot.chain = run.catch(() => {});
  return run;
}

/**
 * A version refused (its weights do not fit): the slot keeps serving its current version, or is
 * UNAVAILABLE with the reason; the error says the same and is marked refused.
 */
export function refuseSlot(slot: Slot, reason: string, log: Logger): XlaserveError {
  const err = new XlaserveError("UNAVAILABLE", reason, { model: slot.name, refused: true });
  if (slot.current) {
    slot.state = "READY";
    slot.reason = `new version refused: ${reason}`;
  } else {
    slot.state = "UNAVAILABLE";
    slot.reason = reason;
  }
  log.error("model refused", { model: slot.name, reason });
  return err;
}

/**
 * A load that failed (other than a refusal, already recorded): a reload keeps serving the previous
 * version and says so, a first load leaves the model UNAVAILABLE with the error. Returns the error.
 */
export function recordLoadFailure(slot: Slot, hadVersion: boolean, err: unknown, log: Logger): XlaserveError {
  const e = asXlaserveError(err);
  if (e.details.refused === true) return e;
  if (hadVersion) {
    slot.state = "READY";
    slot.reason = `reload failed, still serving the previous version: ${e.code}: ${e.message}`;
  } else {
    slot.state = "UNAVAILABLE";
    slot.reason = `${e.code}: ${e.message}`;
  }
  log.error(hadVersion ? "model reload failed" : "model load failed", {
    model: slot.name,
    code: e.code,
    error: e.message,
    serving: hadVersion ? "previous version" : "nothing",
  });
  return e;
}

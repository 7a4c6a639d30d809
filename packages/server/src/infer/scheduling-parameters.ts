import { badRequest } from "../http-error.ts";

/** What a request's parameters ask of the scheduler. */
export interface SchedulingRequest {
  /** performance.now() past which the request is dropped before it runs. */
  readonly deadline?: number;
  /** Lower levels are served first; absent: the scheduler's default. */
  readonly priority?: number;
}

/**
 * The request-level `timeout` (microseconds, as Triton reads it; 0: none) and `priority` (a
 * non-negative integer; 0: the default level) parameters of either transport. Anything else in
 * them is a clear 400, not a silently ignored setting.
 */
export function schedulingOf(parameters: Readonly<Record<string, unknown>> | undefined): SchedulingRequest {
  if (!parameters) return {};
  const out: { deadline?: number; priority?: number } = {};
  const timeout = parameters.timeout;
  if (timeout !== undefined && timeout !== null) {
    if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 0) {
      throw badRequest(
        `parameters.timeout must be a non-negative integer of microseconds, got ${JSON.stringify(timeout)}`,
      );
    }
    if (timeout > 0) out.deadline = performance.now() + timeout / 1000;
  }
  const priority = parameters.priority;
  if (priority !== undefined && priority !== null) {
    if (typeof priority !== "number" || !Number.isInteger(priority) || priority < 0) {
      throw badRequest(`parameters.priority must be a non-negative integer, got ${JSON.stringify(priority)}`);
    }
    if (priority > 0) out.priority = priority;
  }
  return out;
}

/** The sooner of two deadlines (either may be absent). */
export function soonest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

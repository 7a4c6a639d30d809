import type { CancelFlag } from "@xlaserve/server/contract.ts";

/** One request waiting in its model's queue. */
export interface QueuedRequest<P, R> {
  /** The input-shape variant it runs (requests of different variants never share an execution). */
  readonly variant: number | null;
  /** Its rows along the batch axis; null for a model without one. */
  readonly rows: number | null;
  /** Priority level: lower levels leave first. */
  readonly level: number;
  /** Arrival order across the device (ties and fifo). */
  readonly seq: number;
  /** performance.now() at submission. */
  readonly enqueuedAt: number;
  /** performance.now() past which it is dropped with DEADLINE_EXCEEDED instead of run. */
  readonly deadline: number | undefined;
  readonly signal: CancelFlag | undefined;
  readonly payload: P;
  resolve(result: R): void;
  reject(error: unknown): void;
  /** The deadline's timer while it waits. */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Still in its queue (false once taken, dropped or refused). */
  waiting: boolean;
}

/** What a caller submits. */
export interface Submission<P> {
  readonly variant: number | null;
  readonly rows: number | null;
  /** 0 or absent: the scheduler's default level. */
  readonly priority?: number;
  readonly deadline?: number;
  readonly signal?: CancelFlag;
  readonly payload: P;
}

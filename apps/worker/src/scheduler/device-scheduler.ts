import { XlaserveError } from "@xlaserve/core";
import { type Discipline, costKey, selectQueue } from "./disciplines.ts";
import { ModelQueue, type QueuePolicy, type RunBatch } from "./model-queue.ts";
import type { QueuedRequest, Submission } from "./queued-request.ts";

export interface SchedulerOptions {
  readonly discipline: Discipline;
  /** Executions on the device at once across models (Infinity: only each model's own bound). */
  readonly maxInFlight: number;
  /** Requests queued across models before 429 (0: no device-wide bound). */
  readonly maxQueued: number;
  /** Level of a request without a priority (or 0); lower levels leave first. */
  readonly defaultPriority: number;
  readonly emaHalfLifeMs: number;
  readonly costAlpha: number;
  readonly fairnessCap: number;
}

/** Queues of every payload type share one set; each is only ever run with its own requests. */
type AnyQueue = ModelQueue<unknown, unknown>;

/**
 * One scheduler per device, owning every model's queue and the one dispatch loop: whenever the
 * device has room (maxInFlight executions, and each model's own bound), the discipline picks a
 * model, its queued requests are coalesced into one execution at a compiled batch size, requests
 * whose deadline has passed (under edf: that cannot finish in time) are dropped before any
 * device work, and the rest run; their results go back to each caller. Full queues refuse with
 * QUEUE_FULL (429). An execution whose run finishes before it returns (inline) completes within
 * the same turn, so an idle request waits for nothing.
 */
export class DeviceScheduler {
  private readonly queues = new Set<AnyQueue>();
  private inFlight = 0;
  /** When the last execution finished: the start of the device time the next one is charged. */
  private lastSettledAt = Number.NEGATIVE_INFINITY;
  private queued = 0;
  private seq = 0;
  private pumping = false;
  private again = false;
  private wake: ReturnType<typeof setTimeout> | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private turnEnd: ReturnType<typeof setImmediate> | undefined;

  constructor(readonly options: SchedulerOptions) {}

  /** A queue for one model version, served from now on. */
  register<P, R>(label: string, policy: QueuePolicy, run: RunBatch<P, R>): ModelQueue<P, R> {
    const q = new ModelQueue<P, R>(label, policy, run, {
      halfLifeMs: this.options.emaHalfLifeMs,
      alpha: this.options.costAlpha,
    });
    this.queues.add(q as unknown as AnyQueue);
    return q;
  }

  /** Stops serving a queue (its model was drained and freed). */
  unregister<P, R>(q: ModelQueue<P, R>): void {
    this.queues.delete(q as unknown as AnyQueue);
  }

  get running(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.queued;
  }

  /** The QUEUE_FULL refusal a request to `q` would get now (counted as shed), or null when it would be queued. */
  refusal<P, R>(q: ModelQueue<P, R>): XlaserveError | null {
    const depthFull = () => q.items.length >= q.policy.queueDepth;
    const deviceFull = () => this.options.maxQueued > 0 && this.queued >= this.options.maxQueued;
    if (depthFull() || deviceFull()) this.dropAborted(q);
    if (!depthFull() && !deviceFull()) return null;
    q.shed.queueFull++;
    return depthFull() ? q.fullError() : this.deviceFullError(q.label);
  }

  submit<P, R>(q: ModelQueue<P, R>, s: Submission<P>): Promise<R> {
    const refused = this.refusal(q);
    if (refused) return Promise.reject(refused);
    if (s.deadline !== undefined && performance.now() >= s.deadline) {
      q.shed.deadline++;
      return Promise.reject(deadlineError(q.label, "passed before it was queued"));
    }
    return new Promise<R>((resolve, reject) => {
      const item: QueuedRequest<P, R> = {
        variant: s.variant,
        rows: s.rows,
        level: s.priority ? s.priority : this.options.defaultPriority,
        seq: this.seq++,
        enqueuedAt: performance.now(),
        deadline: s.deadline,
        signal: s.signal,
        payload: s.payload,
        resolve,
        reject,
        timer: undefined,
        waiting: true,
      };
      q.insert(item);
      this.queued++;
      if (q.gatherInTurn && q.policy.coalesce) this.pumpAtTurnEnd();
      else this.pump();
      if (item.waiting && item.deadline !== undefined) {
        const deadline = item.deadline;
        item.timer = setTimeout(() => this.expire(q, item), Math.max(0, deadline - performance.now()));
      }
    });
  }

  /** Dispatches while the device has room and a queue is ready. */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const now = performance.now();
          const q = this.next(now, this.inFlight >= this.options.maxInFlight);
          if (!q) break;
          this.dispatch(q, now);
        }
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  /** One dispatch once this turn's other callbacks (the requests read with this one) have run. */
  private pumpAtTurnEnd(): void {
    if (this.turnEnd !== undefined) return;
    this.turnEnd = setImmediate(() => {
      this.turnEnd = undefined;
      this.pump();
    });
  }

  /**
   * The queue to dispatch from now, if any. With the engine's execution slots all taken
   * (`engineFull`) only a queue whose next execution runs inline may go: it runs on this thread
   * beside the engine's, so a light model's requests never wait behind another model's execution.
   * Under fair and edf the last free slot is kept for a model with nothing in flight: a device
   * runs one execution at a time and cannot be preempted, so a flooding model holding every slot
   * would make another model's request wait behind all of its executions; this way it waits
   * behind at most the one running.
   */
  private next(now: number, engineFull: boolean): AnyQueue | undefined {
    const ready: AnyQueue[] = [];
    let wakeAt = Number.POSITIVE_INFINITY;
    const lastSlot =
      this.options.discipline !== "fifo" &&
      this.options.maxInFlight > 1 &&
      this.inFlight === this.options.maxInFlight - 1;
    for (const q of this.queues) {
      if (q.items.length === 0 || q.inFlight >= q.policy.maxInFlight || !q.mayOverlap()) continue;
      if ((engineFull || (lastSlot && q.inFlight > 0)) && !q.nextRunsInline()) continue;
      const held = q.heldUntil(now);
      if (held > 0) wakeAt = Math.min(wakeAt, held);
      else ready.push(q);
    }
    this.armWake(wakeAt);
    if (ready.length === 1) return ready[0];
    return selectQueue(this.options.discipline, ready, this.queues, now, this.options.fairnessCap);
  }

  private dispatch(q: AnyQueue, now: number): void {
    this.dropAbortedFront(q);
    if (q.items.length === 0) {
      q.notifyIfIdle();
      return;
    }
    const plan = q.plan();
    const taken = q.items.splice(0, plan.take);
    this.queued -= taken.length;
    // Deadlines are checked here, before any device work, and never interrupt a run: a passed
    // deadline drops the request; under edf so does one the execution's learned cost would miss.
    const laxityMs = this.options.discipline === "edf" ? q.fair.cost(costKey(plan.size)) * 1000 : 0;
    const live: QueuedRequest<unknown, unknown>[] = [];
    let rows = 0;
    for (const t of taken) {
      t.waiting = false;
      if (t.timer !== undefined) clearTimeout(t.timer);
      if (t.signal?.aborted) {
        q.shed.aborted++;
        t.reject(q.abortedError());
      } else if (t.deadline !== undefined && now >= t.deadline) {
        q.shed.deadline++;
        t.reject(deadlineError(q.label, "passed while it was queued"));
      } else if (t.deadline !== undefined && now + laxityMs >= t.deadline) {
        q.shed.laxity++;
        t.reject(
          deadlineError(
            q.label,
            `is ${round2(t.deadline - now)} ms away, less than the run's expected ${round2(laxityMs)} ms`,
          ),
        );
      } else {
        live.push(t);
        rows += t.rows ?? 1;
      }
    }
    if (live.length === 0) {
      q.notifyIfIdle();
      return;
    }
    q.inFlight++;
    this.inFlight++;
    q.countDispatch(live, rows, plan.size, now);
    const variant = (live[0] as QueuedRequest<unknown, unknown>).variant;
    const timing = { t0: performance.now() };
    const started = () => {
      timing.t0 = performance.now();
    };
    let out: unknown[] | Promise<unknown[]>;
    try {
      out = q.runBatch(
        variant,
        live.map((t) => t.payload),
        plan.size,
        started,
      );
    } catch (err) {
      this.settle(q, live, plan.size, timing, null, err);
      return;
    }
    if (Array.isArray(out)) this.settle(q, live, plan.size, timing, out, null);
    else
      out.then(
        (r) => this.settle(q, live, plan.size, timing, r, null),
        (e) => this.settle(q, live, plan.size, timing, null, e),
      );
  }

  private settle(
    q: AnyQueue,
    live: readonly QueuedRequest<unknown, unknown>[],
    size: number | undefined,
    timing: { readonly t0: number },
    results: readonly unknown[] | null,
    error: unknown,
  ): void {
    const now = performance.now();
    q.inFlight--;
    this.inFlight--;
    const previousSettledAt = this.lastSettledAt;
    this.lastSettledAt = now;
    if (results) {
      q.fair.record(costKey(size), (now - chargedFrom(timing.t0, previousSettledAt)) / 1000, now);
      live.forEach((t, i) => {
        if (i < results.length) t.resolve(results[i]);
        else t.reject(new XlaserveError("INTERNAL", `${q.label}: a coalesced request got no result`));
      });
    } else {
      for (const t of live) t.reject(error);
    }
    q.notifyIfIdle();
    this.pump();
  }

  /** A request whose deadline passed while it waited: dropped now, not when its turn comes. */
  private expire<P, R>(q: ModelQueue<P, R>, item: QueuedRequest<P, R>): void {
    if (!item.waiting || !q.remove(item)) return;
    item.waiting = false;
    this.queued--;
    q.shed.deadline++;
    item.reject(deadlineError(q.label, "passed while it was queued"));
    q.notifyIfIdle();
  }

  /** Aborted requests at the front are dropped when their turn comes (no listener per request). */
  private dropAbortedFront(q: AnyQueue): void {
    while (q.head?.signal?.aborted) this.drop(q, q.head);
  }

  private dropAborted<P, R>(q: ModelQueue<P, R>): void {
    for (const item of [...q.items]) if (item.signal?.aborted) this.drop(q, item);
  }

  private drop<P, R>(q: ModelQueue<P, R>, item: QueuedRequest<P, R>): void {
    if (!q.remove(item)) return;
    item.waiting = false;
    if (item.timer !== undefined) clearTimeout(item.timer);
    this.queued--;
    q.shed.aborted++;
    item.reject(q.abortedError());
  }

  private armWake(at: number): void {
    if (at === Number.POSITIVE_INFINITY || at >= this.wakeAt) return;
    if (this.wake !== undefined) clearTimeout(this.wake);
    this.wakeAt = at;
    this.wake = setTimeout(
      () => {
        this.wake = undefined;
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, at - performance.now()),
    );
  }

  private deviceFullError(label: string): XlaserveError {
    return new XlaserveError(
      "QUEUE_FULL",
      `${label}: the device's queue is full (${this.queued} requests queued across models, scheduler.maxQueued ${this.options.maxQueued})`,
      { queued: this.queued, maxQueued: this.options.maxQueued },
    );
  }
}

function deadlineError(label: string, what: string): XlaserveError {
  return new XlaserveError("DEADLINE_EXCEEDED", `${label}: the request's deadline ${what}`);
}

function round2(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * Where an execution's charged device time starts: at its own start, or where executions overlap
 * (a device runs one at a time, the rest wait there), when the one before it finished. Charged
 * from its own start, the time it waited behind a flooding model's batch would count as its own
 * cost and recent use, and the fair discipline would rank the light model the heavy one.
 */
export function chargedFrom(startedAt: number, previousSettledAt: number): number {
  return Math.max(startedAt, previousSettledAt);
}

import { XlaserveError } from "@xlaserve/core";
import { type BatchRule, chooseBatch, targetRows } from "./batch-choice.ts";
import { FairShare } from "./fair-share.ts";
import { IdleSignal } from "./idle-signal.ts";
import type { QueuedRequest } from "./queued-request.ts";

/** How one model's queue is served. */
export interface QueuePolicy extends BatchRule {
  /** Coalesce queued requests into one execution (every input and output has a batch axis). */
  readonly coalesce: boolean;
  /** The model's executions on the device at once. */
  readonly maxInFlight: number;
  /** Requests waiting beyond which QUEUE_FULL (429) is answered. */
  readonly queueDepth: number;
  /** How long the oldest request may wait for a fuller batch (ms; 0: never waits). */
  readonly maxQueueDelayMs: number;
  /** fair: share of device time. */
  readonly weight: number;
  /** The compiled size by measured rows per second ("throughput") or by the fill rule alone ("fill"). */
  readonly sizeChoice: "throughput" | "fill";
}

/**
 * Runs the requests taken as one execution at `size`; one result per request, in order.
 * `started` marks when the device work begins (after any wait for the device lock or the
 * weights), so the costs learned are the execution's own.
 */
export type RunBatch<P, R> = (
  variant: number | null,
  payloads: readonly P[],
  size: number | undefined,
  started: () => void,
) => R[] | Promise<R[]>;

/** Why requests were refused or dropped instead of run. */
export interface ShedCounts {
  queueFull: number;
  deadline: number;
  laxity: number;
  aborted: number;
}

/** The queue's figures: what waits and runs, waits, batch fill and sheds. */
export interface QueueFigures {
  readonly queued: number;
  readonly running: number;
  readonly coalescing: boolean;
  readonly dispatched: number;
  readonly executions: number;
  /** Rows run over rows the executions' compiled sizes held (1: no padding). */
  readonly batchFill: number | null;
  readonly meanWaitMs: number | null;
  readonly shed: Readonly<ShedCounts>;
  readonly costMs: Record<string, number>;
}

/**
 * One model's queue on a device scheduler: its requests in priority order (arrival order within
 * a level), its executions in flight, and what the disciplines read (fair share, costs).
 */
export class ModelQueue<P, R> {
  readonly items: QueuedRequest<P, R>[] = [];
  inFlight = 0;
  /**
   * Dispatch waits for the end of the event loop's turn, so the requests read in that turn
   * coalesce: set for a coalescing model whose runs finish before they return (inline), where
   * nothing else would gather while one runs.
   */
  gatherInTurn = false;
  /**
   * Whether an execution of `variant` at compiled size `size` would run on this thread, to the
   * end, before dispatch returns (inline, weights resident): it then needs none of the engine's
   * execution slots, and the scheduler dispatches it even while they are all taken. Unset: never.
   */
  runsInline: ((variant: number | null, size: number) => boolean) | null = null;
  readonly fair: FairShare;
  readonly shed: ShedCounts = { queueFull: 0, deadline: 0, laxity: 0, aborted: 0 };
  private readonly idleSignal = new IdleSignal();
  private readonly target: number;
  // Figures.
  private dispatched = 0;
  private executions = 0;
  private waitMs = 0;
  private rowsRun = 0;
  private rowsHeld = 0;

  constructor(
    /** How errors name the model ("model \"mlp\""); follows a rename. */
    public label: string,
    readonly policy: QueuePolicy,
    readonly runBatch: RunBatch<P, R>,
    fairOptions: { halfLifeMs: number; alpha: number },
  ) {
    this.fair = new FairShare(policy.weight, fairOptions.halfLifeMs, fairOptions.alpha);
    this.target = targetRows(policy);
  }

  get head(): QueuedRequest<P, R> | undefined {
    return this.items[0];
  }

  /** In priority order, arrival order within a level (almost always an append). */
  insert(item: QueuedRequest<P, R>): void {
    const items = this.items;
    let i = items.length;
    while (i > 0 && (items[i - 1] as QueuedRequest<P, R>).level > item.level) i--;
    items.splice(i, 0, item);
  }

  remove(item: QueuedRequest<P, R>): boolean {
    const i = this.items.indexOf(item);
    if (i < 0) return false;
    this.items.splice(i, 1);
    return true;
  }

  /** The next execution this queue would run now. */
  plan(): { size: number | undefined; take: number; rows: number } {
    if (!this.policy.coalesce)
      return { size: undefined, take: this.items.length > 0 ? 1 : 0, rows: this.head?.rows ?? 1 };
    const cost = this.policy.sizeChoice === "throughput" ? (size: number) => this.fair.measured(size) : undefined;
    return chooseBatch(this.items, this.policy, cost);
  }

  /** Whether the execution plan() would dispatch now runs inline (see runsInline). */
  nextRunsInline(): boolean {
    const head = this.head;
    if (!head || !this.runsInline) return false;
    // Uncoalesced, a request runs at the smallest compiled size that holds it.
    const size = this.plan().size ?? this.policy.compiledBatchSizes.find((s) => s >= (head.rows ?? 1));
    return size !== undefined && this.runsInline(head.variant, size);
  }

  /**
   * performance.now() until which the queue holds its requests back for a fuller batch (the max
   * queue delay window), or 0 when it would run now.
   */
  heldUntil(now: number): number {
    const head = this.head;
    if (!head || !this.policy.coalesce || this.policy.maxQueueDelayMs <= 0 || head.rows === null) return 0;
    const until = head.enqueuedAt + this.policy.maxQueueDelayMs;
    if (until <= now) return 0;
    let rows = 0;
    for (const r of this.items) {
      if (r.variant !== head.variant || r.rows === null) break;
      rows += r.rows;
      if (rows >= this.target) return 0;
    }
    return until;
  }

  /**
   * Whether another execution may start while this queue already has one in flight. A coalescing
   * model's next execution then waits until its queue fills a whole batch (the rows a delay window
   * waits for): on a device that runs one execution at a time, a second one holding the few rows
   * queued so far would only wait behind the first there, and cost a device run for those rows
   * alone; held back, they join what arrives meanwhile in the next batch (on the H200, half of
   * ResNet-50's executions under a closed loop of 64 clients were single rows beside a batch of
   * about twenty). A full batch still starts at once, so its copies overlap the other's run.
   */
  mayOverlap(): boolean {
    if (this.inFlight === 0 || !this.policy.coalesce) return true;
    const head = this.head;
    if (!head || head.rows === null) return true;
    let rows = 0;
    for (const r of this.items) {
      if (r.variant !== head.variant || r.rows === null) break;
      rows += r.rows;
      if (rows >= this.target) return true;
    }
    return false;
  }

  /** The earliest deadline among the queued requests (Infinity: none has one). */
  earliestDeadline(): number {
    let best = Number.POSITIVE_INFINITY;
    for (const r of this.items) if (r.deadline !== undefined && r.deadline < best) best = r.deadline;
    return best;
  }

  fullError(): XlaserveError {
    return new XlaserveError(
      "QUEUE_FULL",
      `${this.label}: request queue is full (${this.inFlight} executions running, ${this.items.length} requests queued, queue depth ${this.policy.queueDepth})`,
      { running: this.inFlight, queued: this.items.length, queueDepth: this.policy.queueDepth },
    );
  }

  abortedError(): XlaserveError {
    return new XlaserveError("UNAVAILABLE", `${this.label}: request aborted while queued`);
  }

  countDispatch(taken: readonly QueuedRequest<P, R>[], rows: number, size: number | undefined, now: number): void {
    this.executions++;
    this.dispatched += taken.length;
    for (const t of taken) this.waitMs += now - t.enqueuedAt;
    this.rowsRun += rows;
    this.rowsHeld += size ?? rows;
  }

  figures(): QueueFigures {
    return {
      queued: this.items.length,
      running: this.inFlight,
      coalescing: this.policy.coalesce,
      dispatched: this.dispatched,
      executions: this.executions,
      batchFill: this.rowsHeld > 0 ? Math.round((this.rowsRun / this.rowsHeld) * 1000) / 1000 : null,
      meanWaitMs: this.dispatched > 0 ? Math.round((this.waitMs / this.dispatched) * 1000) / 1000 : null,
      shed: { ...this.shed },
      costMs: this.fair.costsMs(),
    };
  }

  notifyIfIdle(): void {
    if (this.inFlight === 0 && this.items.length === 0) this.idleSignal.notify();
  }

  /** Resolves when nothing runs and nothing waits. */
  idle(): Promise<void> {
    return this.idleSignal.wait(this.inFlight === 0 && this.items.length === 0);
  }
}

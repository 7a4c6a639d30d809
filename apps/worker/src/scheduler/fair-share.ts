/**
 * The fair discipline's bookkeeping per model: device time spent recently (an average decaying
 * with a half-life) and a learned cost per compiled batch size. A model that used less than its
 * share of recent device time scores higher; dividing by the execution's cost keeps an expensive
 * model from holding the device on a marginal edge, and the clamp bounds both lockout and
 * domination (ReactantServer's scheduler, which this follows).
 */
export class FairShare {
  /** Recent device seconds, decayed to `updatedAt`. */
  private ema = 0;
  private updatedAt = performance.now();
  /** Per batch size: the cost average (seconds) and when it was last measured. */
  private readonly costs = new Map<number, { seconds: number; at: number }>();

  constructor(
    public weight: number,
    private readonly halfLifeMs: number,
    private readonly alpha: number,
  ) {}

  /** The recent device time, decayed to `now`. */
  recent(now: number): number {
    const dt = now - this.updatedAt;
    if (dt > 0) {
      this.ema *= 2 ** (-dt / this.halfLifeMs);
      this.updatedAt = now;
    }
    return this.ema;
  }

  /** One execution at `size` took `seconds` of device time. */
  record(size: number, seconds: number, now: number): void {
    this.recent(now);
    this.ema += seconds;
    // A stale average is replaced, not blended: it may hold one outlier (a size's first run
    // loads its program and touches its buffers) that kept the size from being chosen since.
    const old = this.fresh(size, now);
    this.costs.set(size, {
      seconds: old === undefined ? seconds : this.alpha * seconds + (1 - this.alpha) * old,
      at: now,
    });
  }

  /** The cost average at `size` unless it is older than REMEASURE_AFTER_MS. */
  private fresh(size: number, now: number): number | undefined {
    const c = this.costs.get(size);
    return c === undefined || now - c.at > REMEASURE_AFTER_MS ? undefined : c.seconds;
  }

  /** Seconds an execution at `size` is expected to take (DEFAULT_COST_S until one was measured). */
  cost(size: number): number {
    return this.costs.get(size)?.seconds ?? DEFAULT_COST_S;
  }

  /**
   * The measured cost at `size` for choosing a batch size: undefined before its first execution
   * there, and again once that measurement is older than REMEASURE_AFTER_MS, so a size the choice
   * has avoided runs once more to be measured instead of being avoided for good on one slow run.
   */
  measured(size: number, now: number = performance.now()): number | undefined {
    return this.fresh(size, now);
  }

  costsMs(): Record<string, number> {
    return Object.fromEntries([...this.costs].map(([size, c]) => [`b${size}`, Math.round(c.seconds * 1e5) / 100]));
  }
}

/**
 * The cost assumed for a (model, size) not measured yet. Its value hardly matters: while every
 * candidate is unmeasured they share it and the deficit decides; the first execution replaces it.
 */
export const DEFAULT_COST_S = 0.001;

/**
 * How old a size's measured cost may get before the batch-size choice measures it again. On the
 * H200 a light model's first run at b8 took 544 ms (b1 0.6 ms); the choice then never ran b8
 * again, so under a flood the model ran one row per execution and its queue overflowed.
 */
export const REMEASURE_AFTER_MS = 2000;

/** The fair score: positive while a model is owed device time, scaled by what its execution costs. */
export function fairScore(share: number, recentShare: number, cap: number, costSeconds: number): number {
  const deficit = Math.min(cap, Math.max(-cap, share - recentShare));
  return deficit / Math.max(costSeconds, 1e-9);
}

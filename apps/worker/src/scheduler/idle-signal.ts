/**
 * The waiters of an `idle()` call: a model's queue lets shutdown wait until
 * nothing runs and nothing queues, and wake every such waiter at once when that happens.
 */
export class IdleSignal {
  private waiters: Array<() => void> = [];

  /** Resolves at once when already idle, else at the next notify(). */
  wait(idleNow: boolean): Promise<void> {
    if (idleNow) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes everyone waiting so far; later calls to wait() wait for the next notify(). */
  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/**
 * Whether splitting work over threads pays on this machine now. Threads only help where they get
 * cores: on a machine busier than its cores (other processes, a library's spinning threads) a
 * woken thread waits for a time slice and the caller waits with it. Each split call reports its
 * wall time and what one thread would have taken (n times the caller's own share); a call slower
 * than that is a loss. After LOSSES more losses than wins, calls stay on one thread for a pause,
 * doubled while losses go on (up to MAX_PAUSE_MS) and reset by a win.
 */
const LOSSES = 8;
const PAUSE_MS = 250;
const MAX_PAUSE_MS = 8000;

export class SplitGovernor {
  private losses = 0;
  private pausedUntil = 0;
  private pause = PAUSE_MS;
  /** Tests and benchmarks that compare paths turn the pauses off. */
  enabled = true;

  allows(now: number): boolean {
    return !this.enabled || now >= this.pausedUntil;
  }

  record(wallMs: number, oneThreadMs: number, now: number): void {
    if (wallMs <= oneThreadMs) {
      if (this.losses > 0) this.losses--;
      else this.pause = PAUSE_MS;
      return;
    }
    if (++this.losses < LOSSES) return;
    this.losses = 0;
    this.pausedUntil = now + this.pause;
    this.pause = Math.min(MAX_PAUSE_MS, this.pause * 2);
  }
}

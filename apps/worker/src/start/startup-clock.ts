/**
 * Splits a worker start into phases for its "ready in N ms" line. performance.now() counts from
 * process start, so the first phase (before startWorker ran) is process start plus imports.
 */
export class StartupClock {
  private readonly laps: Record<string, number> = {};
  private last: number;
  private readonly origin = 0;

  constructor() {
    this.last = performance.now();
    this.laps.processAndImports = this.last;
  }

  lap(phase: string): void {
    const now = performance.now();
    this.laps[phase] = (this.laps[phase] ?? 0) + (now - this.last);
    this.last = now;
  }

  totalMs(): number {
    return this.last - this.origin;
  }

  phases(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.laps).map(([k, v]) => [k, Math.round(v * 10) / 10]));
  }
}

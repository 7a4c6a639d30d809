import type { Logger } from "@xlaserve/core";

/**
 * A repeat signal this soon after the first is the same request delivered twice: a signal to the
 * process group (systemd's default KillMode, Ctrl-C in a terminal) reaches the worker directly
 * and again through `npm start`, which forwards what it gets to its child.
 */
export const REPEAT_SIGNAL_MS = 1000;

/**
 * SIGTERM / SIGINT: graceful stop, then exit 0. A second signal ends the process at once, unless
 * it came within REPEAT_SIGNAL_MS of the first (then it is the same one, forwarded).
 */
export function installStopSignals(stop: () => Promise<void>, log: Logger): void {
  let firstAt: number | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    const now = performance.now();
    if (firstAt === null) {
      firstAt = now;
      log.info("signal received", { signal });
      void stop().then(() => process.exit(0));
      return;
    }
    if (now - firstAt < REPEAT_SIGNAL_MS) return;
    log.warn("second signal: exiting without waiting for the shutdown", { signal });
    process.exit(1);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

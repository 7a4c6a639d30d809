import { readFileSync } from "node:fs";

/**
 * The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat), or null off Linux.
 * Benchmarks record it beside latencies: on a shared host the same program runs visibly slower on
 * some CPUs than on others.
 */
export function currentCpu(): number | null {
  try {
    const stat = readFileSync("/proc/thread-self/stat", "utf8");
    // The command name (field 2) may hold spaces; fields after it follow its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = Number(fields[36]);
    return Number.isInteger(cpu) ? cpu : null;
  } catch {
    return null;
  }
}

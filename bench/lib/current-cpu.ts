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

/** A CPU list as taskset and Cpus_allowed_list write it ("0-3,8") as numbers. */
export function expandCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.split(",")) {
    const [a, b] = part.split("-").map(Number);
    if (a === undefined || Number.isNaN(a)) continue;
    for (let c = a; c <= (b ?? a); c++) out.push(c);
  }
  return out;
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status), or null off Linux. */
export function allowedCpus(): number[] | null {
  try {
    const list = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return list === undefined ? null : expandCpuList(list);
  } catch {
    return null;
  }
}

/**
 * What a benchmark reads back from a running worker to explain a throughput: the statistics
 * extension's counters between two snapshots (executions, rows, each execution's own time) and
 * the worker process's CPU time (every thread, from /proc).
 */
import { readdirSync, readFileSync } from "node:fs";

export interface StatsSnapshot {
  readonly executions: number;
  readonly inferences: number;
  /** compute_input + compute_infer + compute_output, ns, over every execution. */
  readonly executionNs: number;
  readonly queueNs: number;
  readonly queueCount: number;
  /** Each answered request's time from the model's infer call (inputs decoded) to its outputs, ns, summed. */
  readonly successNs: number;
  readonly successCount: number;
  /** Executions by the rows run together. */
  readonly bySize: Readonly<Record<string, number>>;
}

interface StatsJson {
  model_stats: Array<{
    execution_count: number;
    inference_count: number;
    inference_stats: Record<string, { count: number; ns: number }>;
    batch_stats?: Array<{ batch_size: number; compute_infer: { count: number } }>;
  }>;
}

export async function statsSnapshot(url: string, model: string): Promise<StatsSnapshot> {
  const body = (await (await fetch(`${url}/v2/models/${model}/stats`)).json()) as StatsJson;
  const s = body.model_stats[0];
  if (!s) throw new Error(`${model}: no statistics`);
  const part = (k: string) => s.inference_stats[k]?.ns ?? 0;
  return {
    executions: s.execution_count,
    inferences: s.inference_count,
    executionNs: part("compute_input") + part("compute_infer") + part("compute_output"),
    queueNs: part("queue"),
    queueCount: s.inference_stats.queue?.count ?? 0,
    successNs: part("success"),
    successCount: s.inference_stats.success?.count ?? 0,
    bySize: Object.fromEntries((s.batch_stats ?? []).map((b) => [String(b.batch_size), b.compute_infer.count])),
  };
}

/** What happened between two snapshots. */
export interface StatsDelta {
  readonly executions: number;
  readonly rows: number;
  readonly rowsPerExecution: number | null;
  /** One execution's own time (its inputs, run and outputs), mean, ms. */
  readonly executionMs: number | null;
  readonly meanQueueMs: number | null;
  /** A request's mean time from infer call to outputs: the share of its client-side latency the scheduler and the run account for. */
  readonly meanInWorkerMs: number | null;
  readonly executionsByRows: Record<string, number>;
}

export function statsDelta(a: StatsSnapshot, b: StatsSnapshot): StatsDelta {
  const executions = b.executions - a.executions;
  const rows = b.inferences - a.inferences;
  const queued = b.queueCount - a.queueCount;
  const answered = b.successCount - a.successCount;
  const byRows: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.bySize)) {
    const d = v - (a.bySize[k] ?? 0);
    if (d > 0) byRows[k] = d;
  }
  return {
    executions,
    rows,
    rowsPerExecution: executions > 0 ? round3(rows / executions) : null,
    executionMs: executions > 0 ? round3((b.executionNs - a.executionNs) / executions / 1e6) : null,
    meanQueueMs: queued > 0 ? round3((b.queueNs - a.queueNs) / queued / 1e6) : null,
    meanInWorkerMs: answered > 0 ? round3((b.successNs - a.successNs) / answered / 1e6) : null,
    executionsByRows: byRows,
  };
}

/** CPU seconds (user + system, every thread) a process has used; null where /proc is missing. */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of stat(5), 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * CPU seconds per thread group of a process: "main" for its first thread, else the thread's name
 * (comm), so a figure can say which thread a request's CPU time went to (the event loop, the engine
 * thread, a plugin's own threads). Threads that ended before the read are not counted.
 */
export function threadCpuSeconds(pid: number): Map<string, number> | null {
  const groups = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = Number(tid) === pid ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      groups.set(name, (groups.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return groups;
}

/** Microseconds of CPU per request per thread group between two threadCpuSeconds reads. */
export function threadCpuUsPerRequest(
  before: Map<string, number> | null,
  after: Map<string, number> | null,
  requests: number,
): Record<string, number> | null {
  if (!before || !after) return null;
  const out: Record<string, number> = {};
  for (const [name, seconds] of [...after].sort((a, b) => b[1] - a[1])) {
    const us = Math.round(((seconds - (before.get(name) ?? 0)) * 1e6) / requests);
    if (us > 0) out[name] = us;
  }
  return out;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

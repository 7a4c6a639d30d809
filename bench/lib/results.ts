/**
 * The result JSON every benchmark writes: {name, command, date, machine, figures, ratios, errors,
 * notes}, to <results dir>/<name>-<date>.json. The results directory is `--results-dir`, else
 * $XLASERVE_BENCH_RESULTS (bench/gpu/run-all.sh sets it so one run's files land in one folder),
 * else bench/results/.
 *
 * Ratios always carry both sides, measured in the same run, so no figure stands alone:
 * {value, numerator: {label, value}, denominator: {label, value}, goal?, met?}.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, hostname, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { ratio as divide } from "./stats.ts";

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  /** CPUs this process may run on (taskset), where Linux says. */
  readonly affinity: string | null;
  readonly memoryBytes: number;
  readonly gpu: string | null;
  readonly gpuDriver: string | null;
  readonly gpuMemory: string | null;
  readonly platform: string;
  readonly kernel: string | null;
  readonly bun: string;
  readonly hostname: string;
}

let cachedMachine: MachineInfo | null = null;

export function machineInfo(): MachineInfo {
  if (cachedMachine) return cachedMachine;
  let gpu: string | null = null;
  let gpuDriver: string | null = null;
  let gpuMemory: string | null = null;
  try {
    const out = execFileSync("nvidia-smi", ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], {
      encoding: "utf8",
      timeout: 10_000,
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    const first = out.split("\n")[0] ?? "";
    const [name, driver, memory] = first.split(",").map((s) => s.trim());
    gpu = name || null;
    gpuDriver = driver || null;
    gpuMemory = memory || null;
  } catch {
    // no nvidia-smi: a CPU machine
  }
  let affinity: string | null = null;
  let kernel: string | null = null;
  try {
    const status = readFileSync("/proc/self/status", "utf8");
    affinity = /Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] ?? null;
    kernel = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  } catch {
    // not Linux
  }
  cachedMachine = {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    affinity,
    memoryBytes: totalmem(),
    gpu,
    gpuDriver,
    gpuMemory,
    platform: `${process.platform}-${process.arch}`,
    kernel,
    bun: Bun.version,
    hostname: hostname(),
  };
  return cachedMachine;
}

export interface Side {
  readonly label: string;
  readonly value: number | null;
}

export interface RatioEntry {
  readonly value: number | null;
  readonly numerator: Side;
  readonly denominator: Side;
  /** e.g. "<= 1.05" or ">= 50"; `met` says whether `value` meets it. */
  readonly goal?: string;
  readonly met?: boolean | null;
  readonly note?: string;
}

export interface BenchError {
  readonly step: string;
  readonly message: string;
}

/** Accumulates one benchmark's figures, ratios, errors and notes; `write()` saves the JSON. */
export class BenchResult {
  readonly figures: Record<string, unknown> = {};
  readonly ratios: Record<string, RatioEntry> = {};
  readonly errors: BenchError[] = [];
  readonly notes: string[] = [];
  readonly started = new Date();
  /** Where write() / checkpoint() save; benchmarks set it from --results-dir. */
  dir: string | undefined;

  constructor(
    readonly name: string,
    readonly argv: readonly string[] = process.argv,
  ) {}

  figure(key: string, value: unknown): void {
    this.figures[key] = value;
  }

  /** Records numerator / denominator (both sides kept) and prints it. */
  ratio(key: string, numerator: Side, denominator: Side, goal?: string, note?: string): RatioEntry {
    const value = divide(numerator.value, denominator.value);
    const entry: RatioEntry = {
      value,
      numerator,
      denominator,
      ...(goal ? { goal, met: value === null ? null : meetsGoal(value, goal) } : {}),
      ...(note ? { note } : {}),
    };
    this.ratios[key] = entry;
    const shown = value === null ? "n/a" : `${value.toFixed(3)}x`;
    const sides = `${numerator.label} ${fmt(numerator.value)} / ${denominator.label} ${fmt(denominator.value)}`;
    const goalText = goal ? ` (goal ${goal}: ${entry.met === null ? "n/a" : entry.met ? "met" : "NOT met"})` : "";
    console.log(`  ratio ${key}: ${shown}  [${sides}]${goalText}`);
    return entry;
  }

  error(step: string, err: unknown): void {
    const message =
      err instanceof Error
        ? `${err.message}${err.stack ? `\n${err.stack.split("\n").slice(1, 6).join("\n")}` : ""}`
        : String(err);
    this.errors.push({ step, message });
    console.error(`  ERROR in ${step}: ${message.split("\n")[0]}`);
  }

  note(text: string): void {
    this.notes.push(text);
    console.log(`  note: ${text}`);
  }

  /** Runs `fn`, recording a thrown error under `step` instead of aborting the benchmark. */
  async step<T>(step: string, fn: () => Promise<T> | T): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      this.error(step, err);
      return undefined;
    } finally {
      try {
        this.checkpoint();
      } catch {
        // a checkpoint that cannot be written must not fail the step
      }
    }
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      command: this.argv.map(quoteArg).join(" "),
      date: this.started.toISOString(),
      finished: new Date().toISOString(),
      machine: machineInfo(),
      figures: this.figures,
      ratios: this.ratios,
      errors: this.errors,
      notes: this.notes,
    };
  }

  /** Writes <dir>/<name>-<date>.json and returns its path. */
  write(dir: string = this.dir ?? resultsDir()): string {
    const path = this.save(dir, false);
    console.log(`wrote ${path}${this.errors.length ? ` (${this.errors.length} error(s) recorded)` : ""}`);
    return path;
  }

  /**
   * Writes the figures so far, quietly, to the same path as `write` and marked `partial: true`, so
   * a benchmark killed by its time limit still leaves what it measured.
   */
  checkpoint(dir: string = this.dir ?? resultsDir()): string {
    return this.save(dir, true);
  }

  private save(dir: string, partial: boolean): string {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${this.name}-${fileDate(this.started)}.json`);
    writeFileSync(path, `${withoutMachinePaths(JSON.stringify({ ...this.toJSON(), partial }, jsonSafe, 2))}\n`);
    return path;
  }
}

export function resultsDir(explicit?: string): string {
  if (explicit) return resolve(explicit);
  const env = process.env.XLASERVE_BENCH_RESULTS;
  if (env) return resolve(env);
  return resolve(import.meta.dir, "..", "results");
}

/** 2026-11-29T19-20-05Z: sortable and safe in file names. */
export function fileDate(d: Date): string {
  return d
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/:/g, "-");
}

/** Goals like "<= 1.05", "< 0.25", ">= 50", "> 10". */
export function meetsGoal(value: number, goal: string): boolean | null {
  const m = /^\s*(<=|>=|<|>)\s*([0-9.eE+-]+)\s*$/.exec(goal);
  if (!m) return null;
  const bound = Number(m[2]);
  switch (m[1]) {
    case "<=":
      return value <= bound;
    case ">=":
      return value >= bound;
    case "<":
      return value < bound;
    default:
      return value > bound;
  }
}

function fmt(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "n/a";
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
}

function quoteArg(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`;
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number" && !Number.isFinite(value)) return null;
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

const REPO_ROOT = new URL("../..", import.meta.url).pathname;

/**
 * Committed results must not carry the paths of the machine that ran them: paths inside the
 * checkout become repository-relative, Python site-packages folders become `<site-packages>`.
 */
export function withoutMachinePaths(text: string): string {
  return text.replaceAll(REPO_ROOT, "").replace(/\/[^"\s]*?\/site-packages\//g, "<site-packages>/");
}

/**
 * The JAX anchor (bench/anchors/jax_anchor.py) run as a child process, so each xlaserve figure
 * is printed as a ratio against XLA measured in the same run on the same machine.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ProcessResult, describeFailure, lastJsonLine, runProcess } from "./proc.ts";

export const ANCHOR = resolve(import.meta.dir, "..", "anchors", "jax_anchor.py");

export function python(): string {
  return process.env.XLASERVE_BENCH_PYTHON || "python3";
}

export interface AnchorOptions {
  readonly mode: "latency" | "first-result";
  readonly bundleDir: string;
  readonly batch: number;
  readonly platform: "cuda" | "cpu";
  readonly runs?: number;
  readonly cacheDir?: string;
  readonly env?: Record<string, string | undefined>;
  /** Prefix such as ["taskset", "-c", "0,1"]. */
  readonly prefix?: readonly string[];
  readonly timeoutMs?: number;
}

export interface AnchorRun {
  readonly ok: boolean;
  readonly result: Record<string, unknown> | null;
  readonly error: string | null;
  /** Spawn to exit. */
  readonly wallMs: number;
  /** Spawn to the JSON line on stdout (the first result, in first-result mode). */
  readonly resultLineMs: number | null;
  readonly process: ProcessResult;
}

/** Why the anchor cannot run here (no python3 / no jax / no exported program), or null. */
export function anchorUnavailable(bundleDir: string, platform: string, batch: number): string | null {
  const exported = join(bundleDir, `jax_exported.${platform}.b${batch}.bin`);
  if (!existsSync(exported)) {
    return `${exported} is missing (export the bundle with tools/export_jax_bundle.py --jax-exported)`;
  }
  if (!jaxImportable()) return `${python()} cannot import jax`;
  return null;
}

let jaxOk: boolean | null = null;
export function jaxImportable(): boolean {
  if (jaxOk !== null) return jaxOk;
  try {
    execFileSync(python(), ["-c", "import jax, safetensors, numpy"], { stdio: "ignore", timeout: 120_000 });
    jaxOk = true;
  } catch {
    jaxOk = false;
  }
  return jaxOk;
}

export async function runAnchor(o: AnchorOptions): Promise<AnchorRun> {
  const args = [ANCHOR, o.mode, o.bundleDir, "--batch", String(o.batch), "--platform", o.platform];
  if (o.runs !== undefined) args.push("--runs", String(o.runs));
  if (o.cacheDir) args.push("--cache-dir", o.cacheDir);
  const env: Record<string, string | undefined> = { PYTHONUNBUFFERED: "1", ...(o.env ?? {}) };
  if (o.platform === "cpu") env.JAX_PLATFORMS = "cpu";
  const p = await runProcess([...(o.prefix ?? []), python(), ...args], { env, timeoutMs: o.timeoutMs ?? 300_000 });
  const json = lastJsonLine(p.stdout);
  const line = p.stdoutLines.find((l) => l.line.trim().startsWith("{"));
  const ok = p.code === 0 && json !== null;
  return {
    ok,
    result: json,
    error: ok ? null : describeFailure(p),
    wallMs: p.wallMs,
    resultLineMs: line?.atMs ?? null,
    process: p,
  };
}

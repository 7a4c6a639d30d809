/**
 * The parent side of support/reload-child.ts: writes a serialized executable and its arguments
 * where the child reads them, runs the child in a fresh Bun process, and checks what it wrote.
 * Shared by reload.test.ts and bench/resnet50.ts, which must speak the child's job format alike.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DType, HostTensor } from "@xlaserve/core";

export interface ReloadJob {
  readonly plugin: string;
  readonly executable: string;
  readonly args: { file: string; dtype: DType; shape: readonly number[] }[];
  /** The child writes output i's raw bytes to `${out}.${i}`. */
  readonly out: string;
}

/** Writes the job (executable, one raw file per argument, job.json) into `dir`. */
export function writeReloadJob(dir: string, plugin: string, serialized: Uint8Array, args: readonly HostTensor[]) {
  writeFileSync(join(dir, "exe.bin"), serialized);
  const job: ReloadJob = {
    plugin,
    executable: join(dir, "exe.bin"),
    args: args.map((a, i) => {
      const file = join(dir, `arg${i}`);
      writeFileSync(file, new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
      return { file, dtype: a.dtype, shape: a.shape };
    }),
    out: join(dir, "out"),
  };
  const jobFile = join(dir, "job.json");
  writeFileSync(jobFile, JSON.stringify(job));
  return { job, jobFile };
}

/** Runs the child on a job file: its exit code, the timings of its last stdout line, and the wall clock. */
export function runReloadChild(jobFile: string): { exitCode: number; timing: Record<string, number>; wallMs: number } {
  const start = performance.now();
  const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "reload-child.ts"), jobFile]);
  const wallMs = performance.now() - start;
  const timing = JSON.parse(child.stdout.toString().trim().split("\n").pop() ?? "{}");
  return { exitCode: child.exitCode, timing, wallMs };
}

/** Whether the child's output `index` has exactly the bytes of `expected`. */
export function childOutputEquals(job: ReloadJob, index: number, expected: HostTensor): boolean {
  const there = readFileSync(`${job.out}.${index}`);
  return Buffer.from(expected.data.buffer, expected.data.byteOffset, expected.data.byteLength).equals(there);
}

import type { ProgramOptions } from "../plan/program.ts";
import { type CaseResult, familyOf } from "./run-file.ts";

export interface PoolOptions {
  readonly jobs: number;
  /** Per-file limit; a file past it counts as failed and its worker is replaced. */
  readonly timeoutMs: number;
  readonly onFile?: (path: string, results: CaseResult[]) => void;
  /** Plan options for every program (`{ fold: false }` runs everything through run-time steps). */
  readonly programOptions?: ProgramOptions;
}

export interface FileJob {
  readonly path: string;
  /** Name shown in reports (relative to the folder given). */
  readonly name: string;
}

/**
 * Runs conformance files on worker threads: both cores work, and a file that hangs or
 * crashes its worker costs only that file.
 */
export async function runPool(files: FileJob[], options: PoolOptions): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  let next = 0;
  const workerUrl = new URL("./worker.ts", import.meta.url).href;
  const lane = async (): Promise<void> => {
    let worker: Worker | null = null;
    while (next < files.length) {
      const job = files[next++] as FileJob;
      worker ??= new Worker(workerUrl);
      const w = worker;
      const outcome = await new Promise<CaseResult[] | "timeout" | Error>((resolve) => {
        const timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
        w.onmessage = (event: MessageEvent<{ results: CaseResult[] }>) => {
          clearTimeout(timer);
          resolve(event.data.results);
        };
        w.onerror = (event: ErrorEvent) => {
          clearTimeout(timer);
          resolve(new Error(event.message));
        };
        w.postMessage({ path: job.path, name: job.name, options: options.programOptions });
      });
      let fileResults: CaseResult[];
      if (Array.isArray(outcome)) fileResults = outcome;
      else {
        w.terminate();
        worker = null;
        const detail =
          outcome === "timeout" ? `timed out after ${options.timeoutMs} ms` : `worker crashed: ${outcome.message}`;
        fileResults = [{ file: job.name, func: null, family: familyOf(job.name), status: "failed", detail }];
      }
      options.onFile?.(job.path, fileResults);
      results.push(...fileResults);
    }
    worker?.terminate();
  };
  await Promise.all(Array.from({ length: Math.max(1, options.jobs) }, lane));
  return results;
}

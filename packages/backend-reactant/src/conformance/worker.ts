/// <reference lib="webworker" />
import { readFileSync } from "node:fs";
import type { ProgramOptions } from "../plan/program.ts";
import { isReferenceBundle, runBundleCases } from "./bundle-case.ts";
import { type CaseResult, runConformanceFile } from "./run-file.ts";

/**
 * A conformance worker: runs the files (and reference bundles) it is sent, one at a time, and posts each file's
 * results. The pool kills and replaces a worker whose file runs past the timeout.
 */
declare const self: Worker;

self.onmessage = async (event: MessageEvent<{ path: string; name: string; options?: ProgramOptions }>) => {
  const { path, name, options } = event.data;
  let results: CaseResult[];
  try {
    // A bundle folder with XLA's reference outputs runs as one case per batch size.
    results = isReferenceBundle(path)
      ? await runBundleCases(path, name)
      : runConformanceFile(new Uint8Array(readFileSync(path)), name, options);
  } catch (e) {
    results = [{ file: name, func: null, family: name, status: "failed", detail: `crashed: ${(e as Error).message}` }];
  }
  self.postMessage({ path, results });
};

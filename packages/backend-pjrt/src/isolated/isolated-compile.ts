import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ModuleSource, XlaserveError } from "@xlaserve/core";
import type { NamedOption } from "../runtime/named-values.ts";
import { errorFromJson, lastJsonLine, runChild, tail } from "./child-process.ts";

const CHILD = join(import.meta.dir, "compile-child.ts");

export interface ChildCompileRequest {
  readonly pluginPath: string;
  readonly clientOptions: readonly NamedOption[];
  readonly module: ModuleSource;
  readonly compileOptions: Uint8Array;
  readonly timeoutMs?: number;
  /** Aborting it kills the child; the compile then fails with DISPOSED. */
  readonly signal?: AbortSignal;
}

/**
 * Compiles a module in a child process with the same plugin and returns the serialized
 * executable. XLA aborts its process on some bad inputs (CHECK failures); here that ends the
 * child only, and the caller gets COMPILER_CRASHED with the child's stderr. A compile error the
 * plugin reports comes back as the same typed error (COMPILE_FAILED) as an in-process compile.
 */
export async function compileInChild(request: ChildCompileRequest): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-compile-"));
  try {
    const job = {
      pluginPath: request.pluginPath,
      clientOptions: request.clientOptions,
      modulePath: join(dir, "module"),
      format: request.module.format,
      origin: request.module.origin,
      optionsPath: join(dir, "options.pb"),
      outputPath: join(dir, "executable.bin"),
    };
    writeFileSync(job.modulePath, request.module.bytes);
    writeFileSync(job.optionsPath, request.compileOptions);
    writeFileSync(join(dir, "job.json"), JSON.stringify(job));
    const result = await runChild(CHILD, [join(dir, "job.json")], request.timeoutMs ?? 600_000, request.signal);
    if (result.aborted) {
      throw new XlaserveError(
        "DISPOSED",
        `the PJRT backend was disposed while compiling ${request.module.origin ?? "a module"}`,
      );
    }
    const answer = lastJsonLine(result.stdout);
    const typed = errorFromJson(answer);
    if (typed) throw typed;
    const origin = request.module.origin ?? "a module";
    if (result.timedOut || result.exitCode !== 0 || !(answer && typeof answer === "object" && "ok" in answer)) {
      const how = result.timedOut
        ? `was killed after ${request.timeoutMs ?? 600_000} ms`
        : result.signal
          ? `died of ${result.signal}`
          : `exited with code ${result.exitCode}`;
      throw new XlaserveError(
        "COMPILER_CRASHED",
        `the compiler process ${how} while compiling ${origin}: ${tail(result.stderr)}`,
        {
          origin: request.module.origin,
          exitCode: result.exitCode,
          signal: result.signal,
          stderr: tail(result.stderr, 8000),
        },
      );
    }
    return new Uint8Array(readFileSync(job.outputPath));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

import { isXlaserveError } from "@xlaserve/core";
import type { Func, Module } from "@xlaserve/stablehlo";
import { isBytecode } from "@xlaserve/stablehlo";
import { readModule, readModuleBytes } from "../read-module.ts";
import { Arena } from "../plan/arena.ts";
import { Program, type ProgramOptions } from "../plan/program.ts";
import type { CheckFailure } from "../plan/values.ts";

/** The outcome of one conformance program (a testdata file, or one interpret function). */
export interface CaseResult {
  readonly file: string;
  /** Function name for interpret cases; null for a testdata file's @main. */
  readonly func: string | null;
  readonly family: string;
  readonly status: "passed" | "failed" | "unsupported";
  /** Why it failed or is unsupported (first mismatching element, error message). */
  readonly detail?: string;
}

const TYPE_WORDS =
  /_(bfloat16|float16|float32|float64|float8\w*|int\d+|uint\d+|bool|complex64|complex128|shape|dtypes|\d)/;

/** `dot_general_float32_4_3_float32_3_6.mlir` -> `dot_general`; interpret files keep their name. */
export function familyOf(file: string): string {
  const base = file.replace(/^.*\//, "").replace(/\.mlir(\.bc)?$/, "");
  const m = TYPE_WORDS.exec(base);
  return m ? base.slice(0, m.index) : base;
}

/** Runs every case in a module file: text, or its portable-artifact twin (`.mlir.bc`). */
export function runConformanceFile(bytes: Uint8Array, file: string, options: ProgramOptions = {}): CaseResult[] {
  if (!isBytecode(bytes)) return runConformanceText(new TextDecoder().decode(bytes), file, options);
  const family = familyOf(file);
  let module: Module;
  try {
    module = readModuleBytes(bytes, file);
  } catch (e) {
    return [errorResult(file, null, family, e)];
  }
  return entryFunctions(module).map((name) =>
    runCase(module, name, file, module.name === null ? name : null, family, options),
  );
}

/**
 * Runs every case in one file's text. testdata files hold one module whose @main runs the op
 * and checks it; interpret files hold `// -----`-separated chunks of test functions.
 */
export function runConformanceText(text: string, file: string, options: ProgramOptions = {}): CaseResult[] {
  const family = familyOf(file);
  const chunks = text.split(/^\/\/ -----\s*$/m);
  const results: CaseResult[] = [];
  chunks.forEach((chunk, i) => {
    if (!/func\.func/.test(chunk)) return;
    const origin = chunks.length > 1 ? `${file}#${i}` : file;
    let module: Module;
    try {
      module = readModule(chunk, origin);
    } catch (e) {
      results.push(errorResult(file, null, family, e));
      return;
    }
    for (const name of entryFunctions(module)) {
      results.push(
        runCase(module, name, file, chunks.length > 1 || module.name === null ? name : null, family, options),
      );
    }
  });
  return results;
}

/** Functions nothing else calls and that take no arguments: the tests. */
function entryFunctions(module: Module): string[] {
  if (module.funcs.some((f) => f.name === "main")) return ["main"];
  const called = new Set<string>();
  const visit = (ops: Func["body"]) => {
    for (const op of ops) {
      for (const v of Object.values(op.attrs)) {
        if (typeof v === "string") called.add(v);
        else if (v && typeof v === "object" && "symbol" in v) called.add(String((v as { symbol: string }).symbol));
      }
      for (const r of op.regions) visit(r.ops);
    }
  };
  for (const f of module.funcs) visit(f.body);
  return module.funcs.filter((f) => f.args.length === 0 && !called.has(f.name)).map((f) => f.name);
}

function runCase(
  module: Module,
  name: string,
  file: string,
  func: string | null,
  family: string,
  options: ProgramOptions,
): CaseResult {
  const failures: CheckFailure[] = [];
  const f = module.funcs.find((x) => x.name === name);
  if (f && f.args.length > 0) {
    return { file, func, family, status: "unsupported", detail: `@${name} takes arguments the file does not give` };
  }
  try {
    const program = new Program(module, options);
    const compiled = program.func(name);
    compiled.invoke([], { arena: new Arena(), failures });
  } catch (e) {
    return errorResult(file, func, family, e);
  }
  if (failures.length > 0) {
    const first = failures[0] as CheckFailure;
    return { file, func, family, status: "failed", detail: `${first.check}: ${first.message}` };
  }
  return { file, func, family, status: "passed" };
}

function errorResult(file: string, func: string | null, family: string, e: unknown): CaseResult {
  const message = e instanceof Error ? e.message.split("\n")[0] : String(e);
  const status = isXlaserveError(e, "UNSUPPORTED") ? "unsupported" : "failed";
  return { file, func, family, status, detail: message };
}

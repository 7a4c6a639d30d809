import { XlaserveError } from "@xlaserve/core";
import type { Func, Module } from "@xlaserve/stablehlo";
import type { CompiledFunction } from "./compiled-function.ts";
import { FunctionCompiler } from "./function-compiler.ts";

/**
 * The execution plan of a module: each function compiled on first use (function-compiler.ts)
 * into blocks of steps over numbered slots (types.ts), run by run-block.ts.
 */

export { CompiledFunction } from "./compiled-function.ts";
export { release, retain, runBlock } from "./run-block.ts";
export type { PrefixSortKernel } from "./sort-plans.ts";
export { StepTimes } from "./step-times.ts";
export type { Block, ExecContext, Frame, Kernel, KernelTools, OpTime, Step } from "./types.ts";

export interface ProgramOptions {
  /** Fuse elementwise chains into generated loops (default true; false helps debugging). */
  readonly fuse?: boolean;
  /** Fold ops on constants at compile time (default true; false runs everything at run time). */
  readonly fold?: boolean;
}

export class Program {
  private readonly funcs = new Map<string, Func>();
  private readonly compiled = new Map<string, CompiledFunction>();
  private readonly compiling = new Set<string>();

  constructor(
    readonly module: Module,
    readonly options: ProgramOptions = {},
  ) {
    for (const f of module.funcs) this.funcs.set(f.name, f);
  }

  has(name: string): boolean {
    return this.funcs.has(name);
  }

  /** A function's parsed form (for inlining). */
  definition(name: string): Func {
    const f = this.funcs.get(name);
    if (!f) throw new XlaserveError("MODULE_INVALID", `call to unknown function @${name}`, { function: name });
    return f;
  }

  func(name: string): CompiledFunction {
    const done = this.compiled.get(name);
    if (done) return done;
    const f = this.funcs.get(name);
    if (!f) throw new XlaserveError("MODULE_INVALID", `call to unknown function @${name}`, { function: name });
    if (this.compiling.has(name)) {
      throw new XlaserveError("MODULE_INVALID", `@${name} calls itself; StableHLO programs cannot recurse`);
    }
    this.compiling.add(name);
    try {
      const c = new FunctionCompiler(this, f).compile();
      this.compiled.set(name, c);
      return c;
    } finally {
      this.compiling.delete(name);
    }
  }

  /** The entry point: @main, else the only public function. */
  entryName(): string {
    if (this.funcs.has("main")) return "main";
    const pub = this.module.funcs.filter((f) => f.isPublic);
    const only = pub.length === 1 ? pub[0] : this.module.funcs[0];
    if (!only) throw new XlaserveError("MODULE_INVALID", "the module has no functions");
    return only.name;
  }
}

import { XlaserveError, isXlaserveError } from "@xlaserve/core";
import { elementCount } from "../array.ts";
import type { Func, Module, Op, Region } from "@xlaserve/stablehlo";
import { comparatorKey, keyRegion } from "../kernels/heavy/comparator-key.ts";
import { buildKernel } from "../kernels/registry.ts";
import { Arena } from "./arena.ts";
import { fuseSteps } from "./fusion.ts";
import { handOverSlots, markDyingOperands, usedArguments } from "./ownership.ts";
import { type CheckFailure, type RtValue, isArray, isTuple } from "./values.ts";

/**
 * The execution plan: every function compiled into blocks of steps over numbered slots.
 * Compilation resolves names to slots, inlines calls, folds ops whose inputs are all constants
 * (once, here), fuses elementwise chains (fusion.ts) and computes liveness so each intermediate
 * is dropped right after its last use. Regions (while bodies, reducers, comparators) are blocks
 * in their function's slot space, so they read outer values directly.
 */

export interface ExecContext {
  readonly arena: Arena;
  readonly failures: CheckFailure[];
  /** When set, time spent per op name is added here (the per-op profile of bench/). */
  readonly profile?: Map<string, OpTime>;
  /** When set, each step's exclusive time (nested blocks' steps not counted twice). */
  readonly steps?: StepTimes;
}

/**
 * Exclusive time per step: a step that runs blocks (while, case, reduce regions, calls) is charged
 * only for what its nested steps did not take.
 */
export class StepTimes {
  readonly byStep = new Map<Step, OpTime>();
  private readonly nested: number[] = [];

  begin(): void {
    this.nested.push(0);
  }

  end(step: Step, ms: number): void {
    const inner = this.nested.pop() ?? 0;
    const depth = this.nested.length;
    if (depth > 0) this.nested[depth - 1] = (this.nested[depth - 1] as number) + ms;
    record(this.byStep, step, ms - inner);
  }
}

export interface OpTime {
  ms: number;
  count: number;
}

/** One activation of a function: its slots, and which of them hold the plan's constants. */
export interface Frame {
  readonly env: (RtValue | undefined)[];
  readonly ctx: ExecContext;
  /** 1 where the slot holds a folded constant: never freed nor counted per run. */
  readonly constant: Uint8Array;
}

export type Kernel = (args: RtValue[], frame: Frame) => RtValue[];

export interface Step {
  readonly op: Op;
  /** Name in the per-op profile when not the op's own (fused steps). */
  readonly label?: string;
  readonly inputs: number[];
  readonly outputs: number[];
  readonly kernel: Kernel;
  readonly frees: number[];
}

export interface Block {
  readonly argSlots: number[];
  readonly steps: Step[];
  readonly resultSlots: number[];
  /** Result slots cleared as the block returns (plan/ownership.ts): the caller holds the values. */
  readonly handOver: number[];
  /** 1 per argument the block reads; the others are never bound, so they hold no count. */
  readonly argUsed: Uint8Array;
  /** Slots of enclosing blocks this block reads. */
  readonly captures: Set<number>;
}

/** What kernels with regions or calls get at compile time. */
export interface KernelTools {
  readonly regions: Block[];
  readonly program: Program;
}

/** Ops never folded: they have effects, or their point is to run. */
const EFFECTFUL =
  /^(stablehlo\.(custom_call|infeed|outfeed|send|recv|after_all|optimization_barrier)|check\.|interpreter\.)/;
/** Folding these would store large arrays in the plan that are cheap to make at run time (and
 * that fusion reads through strides without materialising them at all). */
const MATERIALIZING = new Set(["stablehlo.broadcast_in_dim", "stablehlo.iota", "stablehlo.pad", "stablehlo.constant"]);
const FOLD_LIMIT = 4096;

export class CompiledFunction {
  /** The slots as every run starts: folded constants in place, the rest empty. */
  private readonly initialEnv: (RtValue | undefined)[];
  /** 1 on the constants' slots; shared by every run's frame, which only reads it. */
  private readonly constantMask: Uint8Array;

  constructor(
    readonly name: string,
    readonly slotCount: number,
    readonly body: Block,
    readonly constants: Map<number, RtValue>,
    readonly pure: boolean,
    readonly outputCount: number,
  ) {
    this.initialEnv = [];
    this.constantMask = new Uint8Array(slotCount);
    for (let s = 0; s < slotCount; s++) this.initialEnv.push(constants.get(s));
    for (const slot of constants.keys()) this.constantMask[slot] = 1;
  }

  /**
   * A call from another function: the results go straight into the caller's slots, which
   * count them, so they are handed over uncounted.
   */
  call(args: RtValue[], ctx: ExecContext): RtValue[] {
    const results = this.invoke(args, ctx);
    for (const r of results) release(ctx.arena, r);
    return results;
  }

  /** Runs the function. The results come back counted in ctx.arena (the caller owns them). */
  invoke(args: RtValue[], ctx: ExecContext): RtValue[] {
    const env = this.initialEnv.slice();
    const constant = this.constantMask;
    const frame: Frame = { env, ctx, constant };
    try {
      const results = runBlock(this.body, frame, args);
      for (const r of results) retain(ctx.arena, r);
      return results;
    } finally {
      for (let s = 0; s < env.length; s++) if (!constant[s] && env[s] !== undefined) clearSlot(frame, s);
      if (ctx.arena.depth === 0) ctx.arena.flush();
    }
  }
}

export function retain(arena: Arena, v: RtValue | undefined): void {
  if (v === undefined) return;
  if (isArray(v)) arena.retain(v.data);
  else if (isTuple(v)) for (const x of v.tuple) retain(arena, x);
}

export function release(arena: Arena, v: RtValue | undefined): void {
  if (v === undefined) return;
  if (isArray(v)) arena.release(v.data);
  else if (isTuple(v)) for (const x of v.tuple) release(arena, x);
}

function setSlot(frame: Frame, slot: number, v: RtValue | undefined): void {
  const prev = frame.env[slot];
  if (prev !== undefined && !frame.constant[slot]) release(frame.ctx.arena, prev);
  frame.env[slot] = v;
  retain(frame.ctx.arena, v);
}

function clearSlot(frame: Frame, slot: number): void {
  const prev = frame.env[slot];
  if (prev !== undefined) release(frame.ctx.arena, prev);
  frame.env[slot] = undefined;
}

/** Runs a block in a frame: binds its arguments, runs its steps, returns its results. */
export function runBlock(block: Block, frame: Frame, args: RtValue[]): RtValue[] {
  const { env } = frame;
  const arena = frame.ctx.arena;
  // Only between steps of the outermost block is no kernel holding arrays it got uncounted,
  // so only there may released buffers return to the arena's pool (arena.ts).
  const outermost = arena.depth === 0;
  arena.depth++;
  try {
    const used = block.argUsed;
    for (let i = 0; i < block.argSlots.length; i++) if (used[i]) setSlot(frame, block.argSlots[i] as number, args[i]);
    const profile = frame.ctx.profile;
    const stepTimes = frame.ctx.steps;
    const timed = profile !== undefined || stepTimes !== undefined;
    for (const step of block.steps) {
      const ins = new Array<RtValue>(step.inputs.length);
      for (let i = 0; i < ins.length; i++) ins[i] = env[step.inputs[i] as number] as RtValue;
      let outs: RtValue[];
      stepTimes?.begin();
      const start = timed ? performance.now() : 0;
      try {
        outs = step.kernel(ins, frame);
      } catch (e) {
        throw stepError(step.op, e);
      }
      if (timed) {
        const ms = performance.now() - start;
        if (profile) record(profile, step.label ?? step.op.name, ms);
        stepTimes?.end(step, ms);
      }
      for (let i = 0; i < step.outputs.length; i++) setSlot(frame, step.outputs[i] as number, outs[i]);
      const frees = step.frees;
      for (let i = 0; i < frees.length; i++) {
        const s = frees[i] as number;
        if (!frame.constant[s]) clearSlot(frame, s);
      }
      if (outermost) arena.flush();
    }
    const resultSlots = block.resultSlots;
    const results = new Array<RtValue>(resultSlots.length);
    for (let i = 0; i < resultSlots.length; i++) results[i] = env[resultSlots[i] as number] as RtValue;
    // Handed over uncounted: nothing returns to the pool before the caller's step ends (arena.ts).
    for (const s of block.handOver) clearSlot(frame, s);
    return results;
  } finally {
    arena.depth--;
  }
}

/** A sort kernel that may be told only the first `sortedPrefix` positions of each line are read. */
export interface PrefixSortKernel extends Kernel {
  sortedPrefix?: number;
}

/**
 * Sorts whose every result is read only through slices of the first K positions along the sorted
 * dimension (top_k as JAX lowers it: a full sort, then slices [0:k]) need only those K in order:
 * their kernel is told K, and selects instead of sorting everything.
 */
function markSortedPrefixes(steps: Step[], stepUses: number[][], resultSlots: number[]): void {
  const results = new Set(resultSlots);
  steps.forEach((step, i) => {
    if (step.op.name !== "stablehlo.sort") return;
    const outs = new Set(step.outputs);
    if (step.outputs.some((o) => results.has(o))) return;
    const rank = (step.op.resultTypes[0] as { shape?: number[] } | undefined)?.shape?.length ?? 0;
    const dim = Number(step.op.attrs.dimension ?? -1);
    const axis = dim < 0 ? dim + rank : dim;
    let prefix = 0;
    for (let j = i + 1; j < steps.length; j++) {
      const uses = stepUses[j] as number[];
      if (!uses.some((u) => outs.has(u))) continue;
      const reader = steps[j] as Step;
      const a = reader.op.attrs;
      const start = Array.isArray(a.start_indices) ? (a.start_indices as unknown[]).map(Number) : null;
      const limit = Array.isArray(a.limit_indices) ? (a.limit_indices as unknown[]).map(Number) : null;
      const strides = Array.isArray(a.strides) ? (a.strides as unknown[]).map(Number) : null;
      // Only a slice reading one sort output from position 0 along the sorted axis.
      if (reader.op.name !== "stablehlo.slice" || uses.length !== 1 || !start || !limit) return;
      if (start[axis] !== 0 || (strides && strides[axis] !== 1)) return;
      prefix = Math.max(prefix, limit[axis] as number);
    }
    if (prefix > 0) (step.kernel as PrefixSortKernel).sortedPrefix = prefix;
  });
}

/** Regions the plan adds to an op: a sort's key function, where its comparator orders by one key. */
function extraRegions(op: Op): Region[] {
  if (op.name !== "stablehlo.sort" || op.regions.length !== 1) return [];
  const region = op.regions[0] as Region;
  const key = comparatorKey(region);
  return key && key.keyOps.length > 0 ? [keyRegion(region, key)] : [];
}

function record<K>(profile: Map<K, OpTime>, name: K, ms: number): void {
  const entry = profile.get(name);
  if (entry) {
    entry.ms += ms;
    entry.count++;
  } else profile.set(name, { ms, count: 1 });
}

function stepError(op: Op, e: unknown): XlaserveError {
  if (isXlaserveError(e)) {
    if (e.message.startsWith(op.name)) return e;
    return new XlaserveError(e.code, `${op.name}: ${e.message}`, { ...e.details, op: op.name }, { cause: e });
  }
  const message = e instanceof Error ? e.message : String(e);
  return new XlaserveError("EXECUTE_FAILED", `${op.name}: ${message}`, { op: op.name }, { cause: e });
}

class Scope {
  private readonly names = new Map<string, number>();
  readonly captures = new Set<number>();
  /**
   * Slots this block defines (and frees). An inlined callee's scope shares its caller's set:
   * its values live in the caller's block.
   */
  constructor(
    readonly parent: Scope | null,
    readonly locals: Set<number> = new Set<number>(),
  ) {}

  define(name: string, slot: number): number {
    this.names.set(name, slot);
    this.locals.add(slot);
    return slot;
  }

  /** Another name for an existing slot (a callee argument, an inlined call's result). */
  alias(name: string, slot: number): void {
    this.names.set(name, slot);
  }

  /** Resolves a name, recording it as a capture of every block it crosses. */
  resolve(name: string): number | undefined {
    const own = this.names.get(name);
    if (own !== undefined) return own;
    const outer = this.parent?.resolve(name);
    if (outer !== undefined) this.captures.add(outer);
    return outer;
  }
}

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

class FunctionCompiler {
  private slots = 0;
  private readonly constants = new Map<number, RtValue>();
  private readonly foldEnv: (RtValue | undefined)[] = [];
  private readonly foldConstant: number[] = [];
  private pure = true;
  private readonly foldCtx: ExecContext = { arena: new Arena(), failures: [] };
  private readonly fuse: boolean;
  private readonly inlining: string[] = [];

  constructor(
    private readonly program: Program,
    private readonly func: Func,
  ) {
    this.fuse = program.options.fuse !== false;
  }

  compile(): CompiledFunction {
    const body = this.block(
      this.func.args.map((a) => a.name),
      this.func.body,
      null,
    );
    return new CompiledFunction(this.func.name, this.slots, body, this.constants, this.pure, body.resultSlots.length);
  }

  private block(argNames: string[], ops: Op[], parent: Scope | null): Block {
    const scope = new Scope(parent);
    const argSlots = argNames.map((n) => scope.define(n, this.slots++));
    const steps: Step[] = [];
    const stepUses: number[][] = [];
    const resultSlots = this.ops(ops, scope, steps, stepUses) ?? [];
    markSortedPrefixes(steps, stepUses, resultSlots);
    const useCount = new Map<number, number>();
    for (const u of [...stepUses.flat(), ...resultSlots]) useCount.set(u, (useCount.get(u) ?? 0) + 1);
    const fused = this.fuse ? fuseSteps(steps, stepUses, useCount) : { steps, uses: stepUses };
    this.assignFrees(fused.steps, fused.uses, new Set(resultSlots), scope);
    markDyingOperands(fused.steps);
    return {
      argSlots,
      steps: fused.steps,
      resultSlots,
      handOver: handOverSlots(resultSlots, scope.locals, this.constants),
      argUsed: usedArguments(argSlots, fused.uses, resultSlots),
      captures: scope.captures,
    };
  }

  /** Compiles ops into `steps`; returns the slots of the terminating return, if any. */
  private ops(ops: Op[], scope: Scope, steps: Step[], stepUses: number[][]): number[] | null {
    for (const op of ops) {
      const resolve = (name: string): number => {
        const s = scope.resolve(name);
        if (s === undefined) {
          throw new XlaserveError("MODULE_INVALID", `${op.name} uses undefined value ${name}`, { value: name });
        }
        return s;
      };
      if (op.name === "func.return" || op.name === "stablehlo.return") return op.operands.map(resolve);
      const inputs = op.operands.map(resolve);
      if (op.name === "func.call" && typeof op.attrs.callee === "string") {
        this.inline(op, op.attrs.callee, inputs, scope, steps, stepUses);
        continue;
      }
      const regions = [...op.regions, ...extraRegions(op)].map((r) =>
        this.block(
          r.args.map((a) => a.name),
          r.ops,
          scope,
        ),
      );
      const uses = [...inputs];
      for (const r of regions)
        for (const c of r.captures) uses.push(scope.locals.has(c) ? c : captureThrough(scope, c));
      if (EFFECTFUL.test(op.name)) this.pure = false;
      const kernel = buildKernel(op, { regions, program: this.program });
      const outputs = op.results.map((n) => scope.define(n, this.slots++));
      if (this.tryFold(op, kernel, inputs, regions, outputs)) continue;
      steps.push({ op, inputs, outputs, kernel, frees: [] });
      stepUses.push(uses);
    }
    return null;
  }

  /**
   * Calls are inlined: the callee's ops join the caller's block, so constants fold through them
   * and elementwise chains fuse across the call (JAX wraps relu and friends in functions).
   */
  private inline(op: Op, callee: string, inputs: number[], scope: Scope, steps: Step[], stepUses: number[][]): void {
    const f = this.program.definition(callee);
    if (this.inlining.includes(callee)) {
      throw new XlaserveError("MODULE_INVALID", `@${callee} calls itself; StableHLO programs cannot recurse`);
    }
    if (f.args.length !== inputs.length) {
      throw new XlaserveError(
        "MODULE_INVALID",
        `call to @${callee} passes ${inputs.length} arguments, it takes ${f.args.length}`,
      );
    }
    const inner = new Scope(null, scope.locals);
    f.args.forEach((a, i) => {
      inner.alias(a.name, inputs[i] as number);
    });
    this.inlining.push(callee);
    const results = this.ops(f.body, inner, steps, stepUses) ?? [];
    this.inlining.pop();
    op.results.forEach((name, i) => {
      const slot = results[i];
      if (slot === undefined)
        throw new XlaserveError("MODULE_INVALID", `@${callee} returns fewer values than the call expects`);
      scope.alias(name, slot);
    });
  }

  private tryFold(op: Op, kernel: Kernel, inputs: number[], regions: Block[], outputs: number[]): boolean {
    if (EFFECTFUL.test(op.name)) return false;
    if (this.program.options.fold === false && op.name !== "stablehlo.constant") return false;
    if (!inputs.every((s) => this.constants.has(s))) return false;
    for (const r of regions) for (const c of r.captures) if (!this.constants.has(c)) return false;
    if (regions.some((r) => r.steps.some((s) => EFFECTFUL.test(s.op.name)))) return false;
    if (MATERIALIZING.has(op.name) && op.name !== "stablehlo.constant") {
      const t = op.resultTypes[0];
      if (t?.kind === "tensor" && elementCount(t.shape) > FOLD_LIMIT) return false;
    }
    const frame: Frame = { env: this.foldEnv, ctx: this.foldCtx, constant: new Uint8Array(this.slots) };
    for (const s of this.foldConstant) frame.constant[s] = 1;
    for (const [s, v] of this.constants) this.foldEnv[s] = v;
    let values: RtValue[];
    try {
      values = kernel(
        inputs.map((s) => this.constants.get(s) as RtValue),
        frame,
      );
    } catch {
      return false; // let it fail at run time, where the error reaches the caller
    }
    outputs.forEach((s, i) => {
      this.constants.set(s, values[i] as RtValue);
      this.foldConstant.push(s);
    });
    return true;
  }

  private assignFrees(steps: Step[], uses: number[][], results: Set<number>, scope: Scope): void {
    const last = new Map<number, number>();
    steps.forEach((step, i) => {
      for (const s of uses[i] as number[]) last.set(s, i);
      for (const s of step.outputs) if (!last.has(s)) last.set(s, i);
    });
    for (const [slot, i] of last) {
      if (!scope.locals.has(slot) || results.has(slot) || this.constants.has(slot)) continue;
      (steps[i] as Step).frees.push(slot);
    }
  }
}

/** A capture of a nested block that is not local here is also a capture of this block. */
function captureThrough(scope: Scope, slot: number): number {
  scope.captures.add(slot);
  return slot;
}

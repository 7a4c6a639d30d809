import { XlaserveError } from "@xlaserve/core";
import type { Func, Op } from "@xlaserve/stablehlo";
import { buildKernel } from "../kernels/registry.ts";
import { SlotOwners } from "./block-slots.ts";
import { CompiledFunction } from "./compiled-function.ts";
import { ConstantFolder, isEffectful } from "./constant-folding.ts";
import { fuseSteps } from "./fusion.ts";
import { SlotNumbers, assignFrees, countUses } from "./liveness.ts";
import { handOverSlots, markDyingOperands, markMovedOperands, movableInputs, usedArguments } from "./ownership.ts";
import type { Program } from "./program.ts";
import { Scope } from "./scope.ts";
import { extraRegions, markSortedPrefixes } from "./sort-plans.ts";
import type { Block, KernelTools, Step } from "./types.ts";

const NO_BLOCKS: Block[] = Object.freeze([]) as unknown as Block[];

/**
 * Compiles one function into its plan: names resolved to slots, calls inlined, ops on constants
 * folded (once, here), elementwise chains fused (fusion.ts), and liveness computed so each
 * intermediate is dropped right after its last use. Regions (while bodies, reducers,
 * comparators) are blocks in the function's slot space, so they read outer values directly.
 */
export class FunctionCompiler {
  private slots = 0;
  private pure = true;
  private readonly folder: ConstantFolder;
  private readonly fuse: boolean;
  private readonly inlining: string[] = [];
  private readonly owners = new SlotOwners();
  private readonly useCount = new SlotNumbers();
  private readonly lastUse = new SlotNumbers();
  /** The tools of every op without regions (most of them), made once. */
  private readonly noRegions: KernelTools;

  constructor(
    private readonly program: Program,
    private readonly func: Func,
  ) {
    this.fuse = program.options.fuse !== false;
    this.folder = new ConstantFolder(program.options.fold !== false);
    this.noRegions = { regions: NO_BLOCKS, program };
  }

  compile(): CompiledFunction {
    const body = this.block(
      this.func.args.map((a) => a.name),
      this.func.body,
      null,
    );
    const { constants } = this.folder;
    return new CompiledFunction(this.func.name, this.slots, body, constants, this.pure, body.resultSlots.length);
  }

  private block(argNames: string[], ops: Op[], parent: Scope | null): Block {
    const scope = new Scope(parent, this.owners.newBlock());
    const argSlots = argNames.map((n) => scope.define(n, this.slots++));
    const steps: Step[] = [];
    const stepUses: number[][] = [];
    const resultSlots = this.ops(ops, scope, steps, stepUses) ?? [];
    markSortedPrefixes(steps, stepUses, resultSlots);
    const fused = this.fuse
      ? fuseSteps(steps, stepUses, countUses(this.useCount, stepUses, resultSlots))
      : { steps, uses: stepUses };
    const { constants } = this.folder;
    assignFrees(this.lastUse, fused.steps, fused.uses, resultSlots, scope.locals, constants);
    markDyingOperands(fused.steps);
    markMovedOperands(fused.steps);
    return {
      argSlots,
      steps: fused.steps,
      resultSlots,
      handOver: handOverSlots(resultSlots, scope.locals, constants),
      argUsed: usedArguments(argSlots, fused.uses, resultSlots),
      captures: scope.captures,
    };
  }

  /** The slots of an op's operands. */
  private resolveOperands(op: Op, scope: Scope): number[] {
    const names = op.operands;
    const slots = new Array<number>(names.length);
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const s = scope.resolve(name);
      if (s === undefined) {
        throw new XlaserveError("MODULE_INVALID", `${op.name} uses undefined value ${name}`, { value: name });
      }
      slots[i] = s;
    }
    return slots;
  }

  /** Compiles ops into `steps`; returns the slots of the terminating return, if any. */
  private ops(ops: Op[], scope: Scope, steps: Step[], stepUses: number[][]): number[] | null {
    for (const op of ops) {
      const name = op.name;
      if (name === "func.return" || name === "stablehlo.return") return this.resolveOperands(op, scope);
      const inputs = this.resolveOperands(op, scope);
      if (name === "func.call" && typeof op.attrs.callee === "string") {
        this.inline(op, op.attrs.callee, inputs, scope, steps, stepUses);
        continue;
      }
      const regions = this.regions(op, scope);
      let uses = inputs;
      if (regions.length > 0) {
        uses = inputs.slice();
        for (const r of regions) for (const c of r.captures) uses.push(scope.nestedUse(c));
      }
      if (isEffectful(name)) this.pure = false;
      const kernel = buildKernel(op, regions.length === 0 ? this.noRegions : { regions, program: this.program });
      const outputs = new Array<number>(op.results.length);
      for (let i = 0; i < outputs.length; i++) outputs[i] = scope.define(op.results[i] as string, this.slots++);
      if (this.folder.tryFold(op, kernel, inputs, regions, outputs)) continue;
      const step: Step = { op, inputs, outputs, kernel, frees: [] };
      if (name === "stablehlo.while") step.movable = movableInputs(inputs, regions);
      steps.push(step);
      stepUses.push(uses);
    }
    return null;
  }

  /** An op's regions as blocks, with the ones the plan adds (a sort's key function). */
  private regions(op: Op, scope: Scope): Block[] {
    if (op.regions.length === 0) return NO_BLOCKS;
    return [...op.regions, ...extraRegions(op)].map((r) =>
      this.block(
        r.args.map((a) => a.name),
        r.ops,
        scope,
      ),
    );
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
}

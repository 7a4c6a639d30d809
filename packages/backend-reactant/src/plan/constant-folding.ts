import type { Op } from "@xlaserve/stablehlo";
import { elementCount } from "../array.ts";
import { Arena } from "./arena.ts";
import type { Block, ExecContext, Frame, Kernel } from "./types.ts";
import type { RtValue } from "./values.ts";

/** Ops never folded: they have effects, or their point is to run. */
const EFFECTFUL =
  /^(stablehlo\.(custom_call|infeed|outfeed|send|recv|after_all|optimization_barrier)|check\.|interpreter\.)/;
const effectfulByName = new Map<string, boolean>();

/** Whether an op has effects (worked out once per op name). */
export function isEffectful(name: string): boolean {
  let effectful = effectfulByName.get(name);
  if (effectful === undefined) {
    effectful = EFFECTFUL.test(name);
    effectfulByName.set(name, effectful);
  }
  return effectful;
}

/** Folding these would store large arrays in the plan that are cheap to make at run time (and
 * that fusion reads through strides without materialising them at all). */
const MATERIALIZING = new Set(["stablehlo.broadcast_in_dim", "stablehlo.iota", "stablehlo.pad"]);
const FOLD_LIMIT = 4096;

/**
 * Folding at compile time: an op whose inputs (and whose regions' captures) are all constants
 * runs once here, and its results become constants of the plan.
 */
export class ConstantFolder {
  readonly constants = new Map<number, RtValue>();
  /** The constants by slot, for the kernels that read the frame (regions, fused loops). */
  private readonly env: (RtValue | undefined)[] = [];
  /** 1 on the constants' slots, grown as slots are folded. */
  private mask = new Uint8Array(64);
  private readonly ctx: ExecContext = { arena: new Arena(), failures: [] };

  constructor(private readonly enabled: boolean) {}

  isConstant(slot: number): boolean {
    return this.mask[slot] === 1;
  }

  /** Runs `kernel` now if it can be folded; true when its outputs became constants. */
  tryFold(op: Op, kernel: Kernel, inputs: number[], regions: Block[], outputs: number[]): boolean {
    if (isEffectful(op.name)) return false;
    if (!this.enabled && op.name !== "stablehlo.constant") return false;
    for (const s of inputs) if (this.mask[s] !== 1) return false;
    for (const r of regions) {
      for (const c of r.captures) if (this.mask[c] !== 1) return false;
      for (const s of r.steps) if (isEffectful(s.op.name)) return false;
    }
    if (MATERIALIZING.has(op.name)) {
      const t = op.resultTypes[0];
      if (t?.kind === "tensor" && elementCount(t.shape) > FOLD_LIMIT) return false;
    }
    const frame: Frame = { env: this.env, ctx: this.ctx, constant: this.mask };
    let values: RtValue[];
    try {
      values = kernel(
        inputs.map((s) => this.constants.get(s) as RtValue),
        frame,
      );
    } catch {
      return false; // let it fail at run time, where the error reaches the caller
    }
    for (let i = 0; i < outputs.length; i++) this.add(outputs[i] as number, values[i] as RtValue);
    return true;
  }

  private add(slot: number, value: RtValue): void {
    if (slot >= this.mask.length) {
      const grown = new Uint8Array(Math.max(this.mask.length * 2, slot + 1));
      grown.set(this.mask);
      this.mask = grown;
    }
    this.mask[slot] = 1;
    this.env[slot] = value;
    this.constants.set(slot, value);
  }
}

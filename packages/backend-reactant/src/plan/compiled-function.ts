import { clearSlot, release, retain, runBlock } from "./run-block.ts";
import type { Block, ExecContext, Frame } from "./types.ts";
import type { RtValue } from "./values.ts";

/** A function's plan: its body block over `slotCount` slots, with the constants folded into it. */
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
    this.initialEnv = new Array<RtValue | undefined>(slotCount).fill(undefined);
    this.constantMask = new Uint8Array(slotCount);
    for (const [slot, value] of constants) {
      this.initialEnv[slot] = value;
      this.constantMask[slot] = 1;
    }
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

import { XlaserveError, isXlaserveError } from "@xlaserve/core";
import type { Op } from "@xlaserve/stablehlo";
import type { Arena } from "./arena.ts";
import { recordTime } from "./step-times.ts";
import type { Block, Frame } from "./types.ts";
import { type RtValue, isArray, isTuple } from "./values.ts";

/** Counts a value's storage once more in the arena (a slot or a caller now holds it). */
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

export function clearSlot(frame: Frame, slot: number): void {
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
      const moves = step.moves;
      if (moves !== undefined)
        for (let i = 0; i < moves.length; i++)
          if (!frame.constant[moves[i] as number]) clearSlot(frame, moves[i] as number);
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
        if (profile) recordTime(profile, step.label ?? step.op.name, ms);
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

export function stepError(op: Op, e: unknown): XlaserveError {
  if (isXlaserveError(e)) {
    if (e.message.startsWith(op.name)) return e;
    return new XlaserveError(e.code, `${op.name}: ${e.message}`, { ...e.details, op: op.name }, { cause: e });
  }
  const message = e instanceof Error ? e.message : String(e);
  return new XlaserveError("EXECUTE_FAILED", `${op.name}: ${message}`, { op: op.name }, { cause: e });
}
